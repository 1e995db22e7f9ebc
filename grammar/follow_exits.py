"""Where a lexeme may end inside a token, for the bytes that may follow it.

A token leaves a lexeme part way when a proper prefix of it completes the lexeme and its next
byte is one the text after the lexeme allows (a string's contents are followed by `"`, a number
by `,`, `}` or `]`...).  Walking the whole vocabulary to find those prefixes costs as much as a
full mask; but only trie nodes with a child spelling a follow byte can be such a prefix, and in
a real vocabulary few nodes lie on a path to one (158 with their `"` children in a 129k byte-level
BPE vocabulary).  `FollowTrie` is the trie pruned to those paths, per set of follow bytes;
`exit_nodes_after` walks it from a lexeme state once for all the bytes (natively, like a mask) and
returns the follow-byte children where the lexeme may end: the seeds from which the rest of the
token is walked after the lexeme (`native_walk.walk_after`).
"""
from __future__ import annotations

import numpy as np

from formwork.grammar._trie_walk import layout
from formwork.grammar.native_walk import walk_state
from formwork.grammar.token_trie import TokenTrie
from formwork.grammar.trie_memo import TrieMemo


class FollowTrie:
    """The trie pruned to the paths to nodes with a child spelling a byte of `follow`, those
    children included, laid out like `TokenTrie.flat_arrays` (no tokens) and `walk_layout`: local
    node i is global node `nodes[i]` (int64) and spells `flat_arrays[2][i]`, and `num_nodes` is
    the root."""

    def __init__(self, trie: TokenTrie, follow: bytes):
        child_lo, child_hi, spelled = trie.flat_arrays[:3]
        n, parent = trie.num_nodes, trie.global_parent
        is_follow = np.isin(spelled, np.frombuffer(follow, dtype=np.uint8))
        keep = np.zeros(n + 1, dtype=bool)
        keep[parent[is_follow]] = True
        for d in range(trie.max_depth - 1, 0, -1):  # and every ancestor of a kept node
            at = trie.level_offset[d]
            kept = at + np.flatnonzero(keep[at: at + len(trie.level_bytes[d])])
            keep[parent[kept]] = True
        nodes = np.flatnonzero(keep[:n] | is_follow)  # level order: children stay contiguous
        lo = np.searchsorted(nodes, np.append(child_lo[nodes], child_lo[n])).astype(np.int32)
        hi = np.searchsorted(nodes, np.append(child_hi[nodes], child_hi[n])).astype(np.int32)
        self.nodes = nodes.astype(np.int64)
        self.num_nodes = len(nodes)
        no_tokens = np.zeros(len(nodes) + 1, dtype=np.int32)
        self.flat_arrays = (lo, hi, spelled[nodes], no_tokens, np.zeros(0, dtype=np.int32))
        self.walk_layout = layout(*self.flat_arrays)
        bitmap = bytearray(32)
        for byte in follow:
            bitmap[byte >> 3] |= 1 << (byte & 7)
        self.keep = bytes(bitmap)  # the follow bytes, as the native walk filters its exits


_FOLLOW_TRIES: TrieMemo[FollowTrie] = TrieMemo(256)
_NO_TOKENS = np.zeros(1, dtype=np.int32)  # the mask words of a pruned trie's walk: it has no tokens to mark
# Seeds are kept as bytes (the collector never walks them; as lists of ints it walked ~2,500 at
# every full collection after 50 Iglu schemas).
_SEEDS_AFTER: TrieMemo[bytes] = TrieMemo(8192)


def follow_trie(trie: TokenTrie, follow: bytes) -> FollowTrie:
    """The pruned trie of the follow bytes `follow` (ascending), built once per trie."""
    return _FOLLOW_TRIES.get(trie, follow, lambda: FollowTrie(trie, follow))


def exit_seeds(trie: TokenTrie, automaton, state: int, byte: int) -> tuple[int, ...]:
    """The trie nodes (global numbers, ascending) spelling `byte` right after a prefix that takes
    `automaton` from `state` to an accepting state (the prefix is never empty)."""
    found = exit_seeds_after(trie, automaton, state, bytes((byte,)))
    return found[0][1] if found else ()


def exit_seeds_after(trie: TokenTrie, automaton, state: int, follow: bytes
                     ) -> tuple[tuple[int, tuple[int, ...]], ...]:
    """`exit_seeds` for each byte of `follow` (ascending), as (byte, seeds) for the bytes that
    have some: `exit_nodes_after` grouped by the byte each node spells."""
    spelled = trie.flat_arrays[2]
    by_byte: dict[int, list[int]] = {}
    for node in np.frombuffer(exit_nodes_after(trie, automaton, state, follow), dtype=np.int64).tolist():
        by_byte.setdefault(int(spelled[node]), []).append(node)
    return tuple((byte, tuple(by_byte[byte])) for byte in sorted(by_byte))


def exit_nodes_after(trie: TokenTrie, automaton, state: int, follow: bytes) -> bytes:
    """The exit seeds of every byte of `follow` (ascending) at once, as the global node numbers
    (native int64 bytes, ascending) that the native walk past the lexeme reads (`walk_after`,
    which finds each node's byte itself), found by one walk of `follow`'s pruned trie; shared by
    every automaton whose state has the same state key."""
    return _SEEDS_AFTER.get(trie, (automaton.state_key(state), follow),
                            lambda: _walk(follow_trie(trie, follow), automaton, state))


def _walk(pruned: FollowTrie, automaton, state: int) -> bytes:
    """The native walk of the pruned trie: its exits are the children of nodes reached in an
    accepting state, of which the ones spelling a follow byte (kept by the walk) are the seeds.
    The walk gives them ascending, and local numbers ascend with global ones."""
    exits = walk_state(pruned, automaton, state, _NO_TOKENS, want_exits=True, keep=pruned.keep)
    return pruned.nodes[exits].tobytes() if len(exits) else b""
