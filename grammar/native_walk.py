"""The vocabulary walk of mask computation, in C (`_trie_walk.c`), over eager or lazy DFAs.

The C loop walks the trie in preorder (one forward pass over the trie's `walk_layout`, jumping
over the subtree of a dead node) and marks the tokens of live nodes in a packed mask; nodes are
named by their level-order numbers outside it.  A lazy DFA's missing rows are built inside the
walk through its SubsetCore; the walk hands back the live nodes whose state lies past the
automaton's arrays, this module grows them (all of a round at once) and walks on from those
nodes.  The step deadline is checked between rounds.
"""
from __future__ import annotations

import struct
import time

import numpy as np

from formwork.grammar._trie_walk import follow as _follow, walk as _walk, walk_after as _walk_after
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.token_trie import TokenTrie

_INT64 = struct.Struct("=q")  # one native int64, as the C walk reads its seeds


def walk_into(trie: TokenTrie, dfa, nodes: np.ndarray | list[int], states: np.ndarray | list[int], words: np.ndarray,
              deadline: float | None = None, want_exits: bool = False,
              keep: bytes | None = None) -> np.ndarray | None:
    """OR into `words` (packed int32, writable) the tokens ending at the live nodes below the seed
    (global node, DFA state) pairs, the seeds included (`trie.num_nodes` is the root, with no
    tokens).  With `want_exits`, returns the global numbers of the children of live non-root nodes
    reached in an accepting state (each once: a node is expanded once, its exits with it); with
    `keep` (a 32-byte bitmap of bytes), only the children that spell one of its bytes."""
    return _walk_seeds(trie, dfa, np.ascontiguousarray(nodes, dtype=np.int64),
                       np.ascontiguousarray(states, dtype=np.int64), words, deadline, want_exits, keep)


def _walk_seeds(trie: TokenTrie, dfa, nodes: np.ndarray | bytes, states: np.ndarray | bytes, words: np.ndarray,
                deadline: float | None, want_exits: bool, keep: bytes | None) -> np.ndarray | None:
    """`walk_into` with the seeds as native int64 buffers."""
    layout = trie.walk_layout
    found: list[np.ndarray] = []
    while True:
        blocked, exits = _native(_walk, dfa, deadline, (layout, nodes, states, words, want_exits), (keep,))
        if want_exits and exits:
            found.append(np.frombuffer(exits, dtype=np.int64))
        if not blocked:
            break
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        pairs = np.frombuffer(blocked, dtype=np.int64)
        nodes, states = pairs[0::2].copy(), pairs[1::2].copy()
        dfa.ensure(states)
    if not want_exits:
        return None
    if len(found) == 1:  # one round (the usual case): no copy
        return found[0]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _native(call, dfa, deadline: float | None, before_core: tuple, after_core: tuple = ()):
    """`call(rows, class_of_byte, expanded, accepting, *before_core, core, seconds, *after_core)`
    over `dfa`'s walk tables, then the lazy DFA takes in the states the call interned.  The
    automaton's arrays are let go first (they live only in this frame): its rows may then grow in
    place (`row_storage`)."""
    rows, class_of_byte, expanded, accepting, core = dfa.walk_tables()
    seconds = -1.0 if deadline is None else max(0.0, deadline - time.perf_counter())
    got = call(rows, class_of_byte, expanded, accepting, *before_core, core, seconds, *after_core)
    del rows, class_of_byte, expanded, accepting
    if core is not None:
        dfa.record_new()
    return got


def walk_after(trie: TokenTrie, dfa, exit_nodes: bytes, after: int, from_root: bool, words: np.ndarray,
               deadline: float | None = None) -> None:
    """OR into `words` the tokens that leave a lexeme and go on in the document: from each exit
    node (non-root nodes, native int64 bytes) in the state its byte leads to from `after` (the
    lexeme's state after, whose row is built), and with `from_root` every token of `after`
    itself; one native call (`walk_into` for the rounds after one blocked on missing rows)."""
    blocked = _native(_walk_after, dfa, deadline, (trie.walk_layout, exit_nodes, after, from_root, words))
    if blocked:
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        pairs = np.frombuffer(blocked, dtype=np.int64)
        states = pairs[1::2].copy()
        dfa.ensure(states)
        _walk_seeds(trie, dfa, pairs[0::2].copy(), states, words, deadline, False, None)


def walk_state(trie: TokenTrie, dfa, state: int, words: np.ndarray, deadline: float | None = None,
               want_exits: bool = False, keep: bytes | None = None) -> np.ndarray | None:
    """`walk_into` from the root in DFA state `state` (tokens whose every prefix stays alive)."""
    return _walk_seeds(trie, dfa, _INT64.pack(trie.num_nodes), _INT64.pack(state), words, deadline, want_exits, keep)


def follow(trie: TokenTrie, dfa, exit_nodes: np.ndarray, start_row: np.ndarray, words: np.ndarray,
           deadline: float | None = None, keep: bytes | None = None) -> tuple[bytes, bytes, bytes] | None:
    """In one native call, `walk_into(want_exits=True)` from the exit nodes (non-root, int64,
    ascending) whose byte `start_row` (next state per byte, 256 int64) keeps alive, each in that
    state: (nonzero word indices as int64 bytes, their int32 values, exits as int64 bytes, only
    those spelling a byte of `keep` when given).
    `words` (the packed mask walked into) must be all zero and is left all zero.  None when the
    walk met states past a lazy DFA's arrays or ran out of time (walk again with `walk_into`)."""
    return _native(_follow, dfa, deadline, (trie.walk_layout, exit_nodes, start_row, words, True), (keep,))
