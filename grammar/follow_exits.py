"""Where a lexeme may end inside a token, for one byte that follows it.

A token leaves a lexeme part way when a proper prefix of it completes the lexeme and its next
byte is one the text after the lexeme allows (a string's contents are followed by `"`, a number
by `,`, `}` or `]`...).  Walking the whole vocabulary to find those prefixes costs as much as a
full mask; but only trie nodes with a child spelling the follow byte can be such a prefix, and in
a real vocabulary few nodes lie on a path to one (under a hundred for `"` in a 129k byte-level
BPE vocabulary).  `FollowTrie` is the trie pruned to those paths, per byte; `exit_seeds` walks it
from a lexeme state, in plain Python, and returns the follow-byte children where the lexeme may
end: the seeds from which the rest of the token is walked after the lexeme.
"""
from __future__ import annotations

import numpy as np

from formwork.grammar.token_trie import TokenTrie
from formwork.grammar.trie_memo import TrieMemo


class FollowTrie:
    """The nodes of `trie` on a path to a node with a child spelling `byte`, as a small tree:
    `children[(depth, node)]` lists kept children (node, byte) and `follow[(depth, node)]` is the
    node's `byte` child as a global node number (root: depth -1, node 0)."""

    def __init__(self, trie: TokenTrie, byte: int):
        keep: list[np.ndarray] = [np.zeros(0, dtype=bool)] * trie.max_depth
        follow: dict[tuple[int, int], int] = {}
        for d in range(trie.max_depth - 1, -1, -1):
            kept = np.zeros(len(trie.level_bytes[d]), dtype=bool)
            if d + 1 < trie.max_depth:
                spelled = np.flatnonzero(trie.level_bytes[d + 1] == byte)
                parents = trie.parent[d + 1]
                for child, parent in zip(spelled.tolist(), parents[spelled].tolist()):
                    follow[(d, parent)] = trie.level_offset[d + 1] + child
                kept[parents[(trie.level_bytes[d + 1] == byte) | keep[d + 1]]] = True
            keep[d] = kept
        self.follow = follow
        self.children: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for d in range(trie.max_depth):
            nodes = np.flatnonzero(keep[d])
            parents = trie.parent[d][nodes].tolist() if d else [0] * len(nodes)
            for node, parent, b in zip(nodes.tolist(), parents, trie.level_bytes[d][nodes].tolist()):
                self.children.setdefault((d - 1, parent), []).append((node, b))


_FOLLOW_TRIES: TrieMemo[FollowTrie] = TrieMemo(256)
_SEEDS: TrieMemo[list[int]] = TrieMemo(8192)


def follow_trie(trie: TokenTrie, byte: int) -> FollowTrie:
    return _FOLLOW_TRIES.get(trie, byte, lambda: FollowTrie(trie, byte))


def exit_seeds(trie: TokenTrie, automaton, state: int, byte: int) -> list[int]:
    """The trie nodes (global numbers) spelling `byte` right after a prefix that takes `automaton`
    from `state` to an accepting state (the prefix is never empty).  Shared by every automaton
    whose state has the same state key."""
    return _SEEDS.get(trie, (automaton.state_key(state), byte),
                      lambda: _walk(follow_trie(trie, byte), automaton, state))


def _walk(pruned: FollowTrie, automaton, state: int) -> list[int]:
    rows: dict[int, list[int]] = {}
    accepting: dict[int, bool] = {}
    seeds: list[int] = []
    stack = [(-1, 0, state)]
    while stack:
        d, node, st = stack.pop()
        row = rows.get(st)
        if row is None:
            row = rows[st] = automaton.row(st).tolist()
            accepting[st] = bool(automaton.accepting[st])
        if d >= 0 and accepting[st]:
            child = pruned.follow.get((d, node))
            if child is not None:
                seeds.append(child)
        for child, b in pruned.children.get((d, node), ()):
            nxt = row[b]
            if nxt:
                stack.append((d + 1, child, nxt))
    return seeds
