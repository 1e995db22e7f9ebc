"""The NFA side of lazy subset construction: byte classes, epsilon closures and interned state sets.

`LazyDFA` asks a builder for the row of a DFA state (a set of NFA states) the first time a walk
needs it; `SubsetBuilder` computes it from the NFA, whose lexeme regions it also reports.  The NFA
builder leaves out sub-terms with empty languages, so every NFA state can reach acceptance: every
non-empty state set has a non-empty language and the empty set is exactly the dead state.
"""
from __future__ import annotations

import numpy as np

from formwork.grammar._subset import SubsetCore
from formwork.grammar.budget import CompileBudget
from formwork.grammar.lexemes import Region
from formwork.grammar.nfa import NFA


_MAX_CLASSES_KEPT = 4096
_classes_kept: dict[int, tuple[np.ndarray, int]] = {}  # `byte_classes`' answers


def byte_classes(cut_mask: int) -> tuple[np.ndarray, int]:
    """(class of each byte, number of classes) of an NFA whose edges cut the bytes at `cut_mask`
    (`NFA.cut_mask`): the class of b is the number of cuts in 1..b.  Kept by the mask, since
    documents and lexemes cut the bytes alike (a JSON document's quotes, digits, escapes...): a
    dict lookup rather than four numpy calls each.  Automata share the arrays, which nothing
    writes (they stay writable only because the native loops' buffer checks take every array
    of an automaton alike)."""
    got = _classes_kept.get(cut_mask)
    if got is None:
        cuts = np.frombuffer(cut_mask.to_bytes(257, "little"), dtype=np.uint8)  # cuts[0] is 1
        classes = cuts[:256].cumsum(dtype=np.int32)
        classes -= 1
        got = (classes, int(classes[255]) + 1)
        if len(_classes_kept) >= _MAX_CLASSES_KEPT:
            _classes_kept.clear()
        _classes_kept[cut_mask] = got
    return got


class SubsetBuilder:
    """The NFA side of subset construction: byte classes, closures and interned state sets.

    The work is done in C (`_subset.c`), which reads the NFA's flat moves and computes
    the moves of lexeme regions by arithmetic from their DFA or template.  `sets[i]` is DFA state i's
    sorted tuple of NFA states.  The NFA must have every state on a path to `final` (see NFA);
    `empty` says the whole language is empty, in which case the start state is the empty set too.
    """

    def __init__(self, nfa: NFA, start: int, final: int, budget: CompileBudget, empty: bool = False):
        budget.check_nfa(nfa.num_states)  # its own states; the regions' count as they are reached
        self.budget = budget
        self.final = final
        self.class_of_byte, self.num_classes = byte_classes(nfa.cut_mask())
        self._nfa = nfa
        self.sets: list[tuple[int, ...]] = []  # filled by the core: DEAD (empty), START, ...
        self._region_facts: dict[int, tuple] = {}  # region index -> `_facts_of` it
        self.core = SubsetCore(nfa.moves, nfa.region_specs(), self.class_of_byte, self.num_classes,
                               start, final, empty, self.sets)

    def closure(self, q: int) -> tuple[int, ...]:
        """The states `q` reaches by epsilon moves (itself included), sorted."""
        return self.core.closure(q)

    def accepting_flags(self, start: int) -> np.ndarray:
        """The accepting flag of every state from `start` on."""
        return np.frombuffer(self.core.accepting_from(start), dtype=bool)

    def intern(self, state_set: tuple[int, ...]) -> int:
        """The index of a closed set of NFA states, added if new."""
        known = len(self.sets)
        sid = self.core.intern(state_set)
        if len(self.sets) > known:  # a new set (one known already was counted when it was made)
            self.check_size()
        return sid

    def check_size(self) -> None:
        """Raise `GrammarBudgetError` if the automaton has grown past its budget: its DFA states
        and its NFA states (the NFA's own and the regions' states reached so far).  One place of
        a counted repetition at every count counts once (a long string's characters do not add
        up: the memory they take is the generation's, as long as what it generated)."""
        self.budget.check_dfa(len(self.sets) - self.core.repeated(), "the grammar automaton")
        reached, counted = self.core.materialised()
        self.budget.check_nfa(self._nfa.num_states + reached - counted)

    def region_of(self, i: int) -> tuple[Region, frozenset[int], bool, bool] | None:
        """(region, the set's NFA states inside it, whether it holds the region's start, whether
        the lexeme may end here) when set `i` lies inside one lexeme region (not a `CountedDFA`'s:
        it has no automaton of its own to share masks through): its other states are
        the region's start (if only the lexeme leaves it) and, if the lexeme may end here, exactly
        the states after it."""
        k = self.core.locate(i) if self._nfa.region_tuples else -1
        if k < 0:
            return None
        facts = self._region_facts.get(k)
        if facts is None:
            facts = self._region_facts[k] = self._facts_of(k)
        region, start_ok, after = facts
        if region is None:
            return None
        states, first, last = self.sets[i], region.first, region.last
        inside = frozenset([x for x in states if first <= x < last])
        if region.dfa is not None and len(inside) > 1:  # a loop entered the region again: two places
            return None
        at_start = region.start in states
        if at_start and not start_ok:
            return None
        if len(inside) + at_start == len(states):
            return region, inside, at_start, False
        if after is not None and len(states) == len(inside) + at_start + len(after) and after.issubset(states):
            return region, inside, at_start, True
        return None

    def _facts_of(self, k: int) -> tuple[Region | None, bool, frozenset[int] | None]:
        """What `region_of` needs of region `k` whatever the state: the region (None for a
        `CountedDFA`'s), whether only the lexeme leaves its start, and the states right after it
        (None if they hold its start or a state inside it: no set is then inside and past it)."""
        region = self._nfa.region(k)
        if getattr(region.dfa, "counted_dfa", False):  # no automaton of its own: masks walk the document
            return None, False, None
        after = frozenset(self.closure(region.end))
        if region.start in after or any(region.first <= x < region.last for x in after):
            after = None
        start_ok = region.start >= 0 and region.start_moves == self._nfa.move_counts(region.start)
        return region, start_ok, after

    def in_open_lexeme(self, i: int) -> bool:
        """Whether set `i` holds the start of, or a state inside, an open-ended lexeme region
        (see `lexemes.lexeme`): its language then admits any string characters next."""
        return self.core.in_open(i)

    def write_rows(self, states: list[int], rows: np.ndarray, expanded: np.ndarray) -> None:
        """Write the successor per byte class of each of `states` into `rows` (int32, a row per
        DFA state, new state sets interned) and set their `expanded` flags."""
        self.core.rows(states, rows, expanded)
        self.check_size()

