"""The NFA side of lazy subset construction: byte classes, epsilon closures and interned state sets.

`LazyDFA` asks a builder for the row of a DFA state (a set of NFA states) the first time a walk
needs it; `SubsetBuilder` computes it from the NFA, whose lexeme regions it also reports.  The NFA
builder leaves out sub-terms with empty languages, so every NFA state can reach acceptance: every
non-empty state set has a non-empty language and the empty set is exactly the dead state.
"""
from __future__ import annotations

import numpy as np

from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.lexemes import Region
from formwork.grammar.nfa import NFA


class SubsetBuilder:
    """The NFA side of subset construction: byte classes, closures and interned state sets.

    The NFA must have every state on a path to `final` (see NFA); `empty` says the whole
    language is empty, in which case the start state is the empty set too.
    """

    def __init__(self, nfa: NFA, start: int, final: int, budget: CompileBudget, empty: bool = False):
        budget.check_nfa(len(nfa.eps))
        self.budget = budget
        self.final = final
        bounds = sorted(nfa.cuts())
        self.num_classes = len(bounds) - 1
        self.class_of_byte = np.zeros(256, dtype=np.int32)
        for k in range(self.num_classes):
            self.class_of_byte[bounds[k]:bounds[k + 1]] = k
        self._class_list = self.class_of_byte.tolist()
        self._nfa = nfa
        self._class_edges: list[tuple[tuple[int, int, int], ...] | None] = [None] * len(nfa.edges)
        self.regions: list[Region] = nfa.regions
        self._region_at_start = {r.start: r for r in nfa.regions if r.start_moves is not None}
        self._closures: dict[int, tuple[int, ...]] = {}
        self._open_starts = {r.start for r in nfa.regions if r.open_ended}  # empty: no open-ended region
        self._union: dict[int | tuple[int, ...], int] = {}  # NFA state(s) -> their closure's index
        # state sets as sorted tuples of ints: untracked by the cyclic garbage collector
        nothing: tuple[int, ...] = ()
        self.sets: list[tuple[int, ...]] = [nothing, nothing if empty else self.closure(start)]
        self.index: dict[tuple[int, ...], int] = {nothing: DEAD}
        self.index.setdefault(self.sets[START], START)

    def class_edges(self, q: int) -> tuple[tuple[int, int, int], ...]:
        """Edges of NFA state `q` as (first class, last class, target), computed on first use."""
        got = self._class_edges[q]
        if got is None:
            cls = self._class_list
            got = self._class_edges[q] = tuple([(cls[lo], cls[hi], t) for lo, hi, t in self._nfa.moves(q)[1]])
        return got

    @staticmethod
    def _disjoint(edges: tuple[tuple[int, int, int], ...]) -> bool:
        """Whether no byte class is on two of the edges."""
        seen = 0
        for clo, chi, _ in edges:
            span = (1 << (chi + 1)) - (1 << clo)
            if seen & span:
                return False
            seen |= span
        return True

    def closure(self, q: int) -> tuple[int, ...]:
        """The states `q` reaches by epsilon moves (itself included), sorted."""
        got = self._closures.get(q)
        if got is None:
            if not self._nfa.moves(q)[0]:
                got = self._closures[q] = (q,)
                return got
            seen = {q}
            stack = [q]
            while stack:
                for t in self._nfa.moves(stack.pop())[0]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
            got = self._closures[q] = tuple(sorted(seen))
        return got

    def accepting(self, i: int) -> bool:
        return self.final in self.sets[i]

    def intern(self, state_set: tuple[int, ...]) -> int:
        """The index of a closed NFA state set (a sorted tuple), added if new."""
        sid = self.index.get(state_set)
        if sid is None:
            sid = self.index[state_set] = len(self.sets)
            self.sets.append(state_set)
            self.budget.check_dfa(len(self.sets), "the grammar automaton")
        return sid

    def region_of(self, i: int) -> tuple[Region, frozenset[int], bool, bool] | None:
        """(region, the set's NFA states inside it, whether it holds the region's start, whether
        the lexeme may end here) when set `i` lies inside one lexeme region: its other states are
        the region's start (if only the lexeme leaves it) and, if the lexeme may end here, exactly
        the states after it."""
        states = self.sets[i]
        if not self.regions:
            return None
        for x in states:
            region = self._region_at_start.get(x) or self._nfa.region_at(x)
            if region is not None:
                break
        else:
            return None
        inside = frozenset(x for x in states if region.first <= x < region.last)
        at_start = region.start in states
        if at_start and region.start_moves != tuple(map(len, self._nfa.moves(region.start))):
            return None
        rest = set(states) - inside - {region.start}
        if not rest:
            return region, inside, at_start, False
        after = frozenset(self.closure(region.end))
        if rest == after and region.start not in after and \
                not any(region.first <= x < region.last for x in after):
            return region, inside, at_start, True
        return None

    def in_open_lexeme(self, i: int) -> bool:
        """Whether set `i` holds the start of, or a state inside, an open-ended lexeme region
        (see `lexemes.lexeme`): its language then admits any string characters next."""
        if not self._open_starts:
            return False
        for x in self.sets[i]:
            if x in self._open_starts:
                return True
            region = self._nfa.region_at(x)
            if region is not None and region.open_ended:
                return True
        return False

    def _successor(self, key: int | tuple[int, ...]) -> int:
        """The state index of the closure of NFA state `key` (or of the union of a sorted tuple of
        two or more states' closures), interned on first use."""
        if type(key) is int:
            merged = self.closure(key)
        else:
            merged = tuple(sorted(set().union(*map(self.closure, key))))
        sid = self._union[key] = self.intern(merged)
        return sid

    def row(self, i: int) -> list[int]:
        """Successor state index per byte class (new state sets are interned)."""
        row = [DEAD] * self.num_classes
        states = self.sets[i]
        known, union = self._class_edges, self._union
        if len(states) == 1:
            edges = known[states[0]]
            if edges is None:
                edges = self.class_edges(states[0])
            if self._disjoint(edges):  # the usual case: whole edges at once
                for clo, chi, t in edges:
                    sid = union.get(t)
                    row[clo:chi + 1] = [sid if sid is not None else self._successor(t)] * (chi - clo + 1)
                return row
        else:
            edges = [e for q in states for e in (known[q] if known[q] is not None else self.class_edges(q))]
        cuts = sorted({c for clo, chi, _ in edges for c in (clo, chi + 1)})
        at = {c: k for k, c in enumerate(cuts)}
        runs: list[list[int]] = [[] for _ in cuts]  # runs of classes with the same edges
        for clo, chi, t in edges:
            for k in range(at[clo], at[chi + 1]):
                runs[k].append(t)
        for a, b, targets in zip(cuts, cuts[1:], runs):  # in class order
            if not targets:
                continue
            if len(targets) == 1:
                key: int | tuple[int, ...] = targets[0]
            else:
                key = tuple(sorted(set(targets)))
                if len(key) == 1:
                    key = key[0]
            sid = union.get(key)
            row[a:b] = [sid if sid is not None else self._successor(key)] * (b - a)
        return row
