"""Where tokens go after a terminal ends part way through them, independent of the parser.

From the trie nodes right after a terminal may end (an `Exits`), a token continues inside the
next terminal t2 — the walk over t2's own DFA from its start state — and, where t2 may end in
turn, into the terminal after it.  Which terminals may come next is the parser's business; the
walk inside t2 is not.  So the walk is a `Continuation` cached on the exits it starts from, per
next terminal (by the state key of its start, which names its language): every Earley set,
configuration, grammar and compilation that reaches the same exits and next terminal reuses it,
and the per-mask work at a terminal boundary is a few dictionary lookups per expected terminal
plus memoised parser scans.
"""
from __future__ import annotations

import threading
from collections.abc import Hashable

import numpy as np

from formwork.grammar._packed import nonzero_words, or_words
from formwork.grammar.dfa import START
from formwork.grammar.native_walk import follow, walk_into
from formwork.grammar.terminal_exits import Exits, interned_exits

_LOCK = threading.Lock()


class Continuation:
    """The tokens through some exits that end inside the next terminal, as the nonzero words of
    a packed mask (`at`: word indices, `bits`: their values), and where the terminal may end."""

    __slots__ = ("at", "bits", "exits")

    def __init__(self, at: bytes, bits: bytes, exits: Exits):
        self.at = np.frombuffer(at, dtype=np.int64)
        self.bits = np.frombuffer(bits, dtype=np.int32)
        self.exits = exits

    @classmethod
    def of_words(cls, words: np.ndarray, exits: Exits) -> "Continuation":
        """The continuation with the tokens of packed mask `words`."""
        return cls(*nonzero_words(words), exits)

    def add_to(self, words: np.ndarray) -> None:
        """OR the tokens into packed mask `words` (writable)."""
        or_words(words, self.at, self.bits)


def continuation(source: Exits, dfa, deadline: float | None, key: Hashable = None,
                 start_row: np.ndarray | None = None, keep: bytes | None = None) -> Continuation:
    """The `Continuation` of `source` into the terminal with DFA `dfa`, computed on first use
    (cached on `source` under `key`, the state key of the terminal's start: the name of its
    language; callers that ask often pass it in, and the start state's row per byte, int64).
    With `keep` (a 32-byte bitmap: the bytes that may start what follows the terminal), its exits
    are only the nodes spelling one of those bytes; it is part of the cache key.
    The seeds, walk and nonzero words are one native call (`native_walk.follow`) unless the
    walk meets states past a lazy DFA's arrays, which the round-based `walk_into` handles."""
    if key is None:
        key = dfa.state_key(START)
    key = (key, keep)
    got = source.next.get(key)
    if got is not None:
        return got
    trie = source.trie
    row = np.ascontiguousarray(dfa.row(START) if start_row is None else start_row, dtype=np.int64)
    words = _scratch(len(trie.token_node))
    done = follow(trie, dfa, source.node, row, words, deadline, keep)  # one native call, most often
    if done is not None:
        at, bits, ends = done
        got = Continuation(at, bits, interned_exits(trie, np.frombuffer(ends, dtype=np.int64), canonical=True))
    else:
        nodes, states = source.seeds(row)
        try:
            ends = walk_into(trie, dfa, nodes, states, words, deadline, want_exits=True, keep=keep)
            got = Continuation.of_words(words, interned_exits(trie, ends))
        finally:
            words[:] = 0
    with _LOCK:
        return source.next.setdefault(key, got)


_SCRATCH = threading.local()


def _scratch(vocab_size: int) -> np.ndarray:
    """A zeroed packed mask of this thread, reused (a fresh one costs page faults each time);
    callers zero it again when done."""
    words = getattr(_SCRATCH, "words", None)
    size = (vocab_size + 31) // 32
    if words is None or len(words) != size:
        words = _SCRATCH.words = np.zeros(size, dtype=np.int32)
    return words
