"""A language of string contents under a large maxLength, counted instead of multiplied out.

`pattern & item{0,hi}` (a `pattern` or `format` language of JSON string contents under a
maxLength, `item` one character) as an eager DFA has about hi x |pattern| x |character| states.
Here it is the product `D` of the pattern's DFA with the DFA of `item*` (which knows where
characters end), and a count of the characters done: the document NFA embeds it as a region whose
state (j, d) is NFA state `first + j * n + d - 1` (n: D's live states), made by the subset core
when first reached (`_subset_rows.c`).  A move into a state where a character ends counts one
more; it is kept only if the place it leads to can still end within the bound, j + `least[d]`
<= hi, where `least[d]` is the fewest characters that end the pattern from d.  Every reached
place can then end (an NFA's states must all lead to its end: a lazy DFA's non-dead states then
all have non-empty languages, which keeps masks exact).
"""
from __future__ import annotations

from collections import deque

import numpy as np

from formwork.grammar.dfa import DFA, product_pairs
from formwork.grammar.budget import CompileBudget

_UNREACHABLE = np.iinfo(np.int32).max
#: Bounds from which a language under a repetition bound is counted rather than multiplied out
#: (below, its DFA is small enough, and its masks are shared as a DFA region's).
COUNT_FROM = 65


class CountedDFA:
    """`pattern & item{0,hi}` as the product `table` (a DFA table: 0 dead, 1 start; every other
    state can end the pattern) with per state whether it ends a character (`tick`), whether the
    pattern may end there (`accepting`) and the fewest characters to an end (`least`).  Embedded
    in a document NFA as a region of `num_states - 1` states (see the module)."""

    counted_dfa = True

    def __init__(self, table: np.ndarray, accepting: np.ndarray, tick: np.ndarray, least: np.ndarray, hi: int):
        self.table, self.accepting, self.tick, self.least, self.hi = table, accepting, tick, least, hi
        self.live_states = int(table.shape[0]) - 1  # D's states but the dead one
        self.num_states = 1 + (hi + 1) * self.live_states  # as a DFA region: state 0, then the places
        self._cache: dict = {}

    def is_empty(self) -> bool:
        return self.live_states == 0 or int(self.least[1]) > self.hi

    def spec(self) -> tuple:
        """What the subset core reads (`b` of a region spec): accepting and tick flags as bytes,
        `least` as int32 bytes, the bound."""
        got = self._cache.get("spec")
        if got is None:
            got = self._cache["spec"] = (self.accepting.astype(np.uint8).tobytes(), self.tick.astype(np.uint8).tobytes(),
                                         self.least.astype(np.int32).tobytes(), self.hi)
        return got


def is_prefix_code(item: DFA) -> bool:
    """Whether `item` (a minimal DFA) is a non-empty language in which no string is a prefix of
    another (JSON characters are: UTF-8, escapes): then a string of `item*` splits into items in
    exactly one way, and the DFA of `item*` accepts exactly where an item ends."""
    accepting = np.flatnonzero(item.accepting)
    return len(accepting) > 0 and not item.accepting[1] and not item.table[accepting].any()


def counted_intersection(pattern: DFA, chars: DFA, hi: int, budget: CompileBudget) -> CountedDFA:
    """`pattern & item{0,hi}` where `chars` is the minimal DFA of `item*` for an item that
    `is_prefix_code` (so its accepting states are exactly where items end, and a move into one
    ends one item)."""
    rows, codes, class_of_byte = product_pairs(pattern, chars, budget)
    nb = chars.num_states
    tick = chars.accepting[codes % nb]
    accepting = pattern.accepting[codes // nb] & tick
    table = rows[:, class_of_byte]  # pair numbers (0: the start pair) per byte
    least = _least_characters(table, accepting, tick)
    keep = least < _UNREACHABLE  # the pairs that can end the pattern (no pair with a dead side can)
    if not keep[0]:  # the start pair cannot: the empty language
        return CountedDFA(np.zeros((2, 256), dtype=np.int32), np.zeros(2, dtype=bool), np.zeros(2, dtype=bool),
                          np.full(2, _UNREACHABLE, dtype=np.int32), hi)
    number = np.zeros(len(codes), dtype=np.int32)  # new numbers: 0 dead, 1 the start pair
    kept = np.flatnonzero(keep)
    number[kept] = np.arange(1, len(kept) + 1, dtype=np.int32)
    out = np.zeros((len(kept) + 1, 256), dtype=np.int32)
    out[1:] = number[table[kept]]
    flags = lambda values: np.concatenate([[False], values[kept]])  # noqa: E731
    return CountedDFA(out, flags(accepting), flags(tick),
                      np.concatenate([[_UNREACHABLE], least[kept]]).astype(np.int32), hi)


def _least_characters(table: np.ndarray, accepting: np.ndarray, tick: np.ndarray) -> np.ndarray:
    """Per product state, the fewest characters that end the pattern from it (a move into a
    state where a character ends counts one): breadth-first backwards, 0-1 weighted."""
    n = table.shape[0]
    sources, _ = np.nonzero(table >= 0)
    targets = table.reshape(-1)
    order = np.argsort(targets, kind="stable")
    by_target = sources[order]
    starts = np.searchsorted(targets[order], np.arange(n + 1))
    least = np.full(n, _UNREACHABLE, dtype=np.int64)  # weights: at most n characters
    least[accepting] = 0
    todo = deque(np.flatnonzero(accepting).tolist())
    while todo:
        t = todo.popleft()
        weight = int(tick[t])
        for s in set(by_target[starts[t]: starts[t + 1]].tolist()):
            got = least[t] + weight
            if got < least[s]:
                least[s] = got
                if weight:
                    todo.append(s)
                else:
                    todo.appendleft(s)
    return least
