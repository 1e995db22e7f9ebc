"""Thompson-style NFA built from the IR.

`And` / `Not` sub-terms are compiled to DFAs first (product / complement) and embedded
back into the NFA as ordinary states.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DFA, DEAD, START
from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import (
    Alt, And, ByteSet, Bytes, Empty, Node, Not, Nothing, Repeat, RuleRef, Seq,
)
from formwork.grammar.lexemes import Region, is_lexeme


class NFA:
    """States with epsilon moves and byte-range edges `(lo, hi, target)`.

    Sub-terms with an empty language add nothing, so every state lies on a path to the end
    state: a non-empty set of states always has a non-empty language.  `regions` records where
    lexemes (embedded DFAs, nodes marked with `lexeme()`) were built, outermost only, in order.
    """

    def __init__(self, budget: CompileBudget, dfa_of: Callable[[Node], DFA], record_regions: bool = True):
        self.eps: list = []  # per state: epsilon targets (lists while building, then tuples)
        self.edges: list = []  # per state: (lo, hi, target) byte ranges
        self.budget = budget
        self.dfa_of = dfa_of
        self._empty: dict[Node, bool] = {}
        self.regions: list[Region] = []
        self._inside = 0 if record_regions else 1  # > 0: inside a region, record none

    def freeze(self) -> None:
        """End construction: moves become tuples, which the cyclic garbage collector stops
        tracking (a process holding many automata otherwise pays for re-scanning its lists)."""
        self.eps = [tuple(x) for x in self.eps]
        self.edges = [tuple(x) for x in self.edges]

    def is_empty(self, node: Node) -> bool:
        """True when `node` matches no string at all."""
        got = self._empty.get(node)
        if got is None:
            if isinstance(node, Nothing):
                got = True
            elif isinstance(node, ByteSet):
                got = not node.ranges
            elif isinstance(node, Seq):
                got = any(self.is_empty(x) for x in node.items)
            elif isinstance(node, Alt):
                got = all(self.is_empty(x) for x in node.items)
            elif isinstance(node, Repeat):
                got = node.min > 0 and self.is_empty(node.item)
            elif isinstance(node, (And, Not)):
                got = self.dfa_of(node).is_empty()
            else:
                got = False
            self._empty[node] = got
        return got

    def new_state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        n = len(self.eps)
        if n % 4096 == 0:
            self.budget.check_nfa(n)
            self.budget.check_time("NFA construction")
        return n - 1

    def build(self, node: Node, s: int, e: int) -> None:
        """Add paths from `s` to `e` spelling exactly the language of `node`.

        Invariant: never adds edges into `s` or out of `e` (loops use fresh states).
        """
        if self.is_empty(node):
            return
        if not self._inside and isinstance(node, Repeat) and is_lexeme(node):
            first = len(self.eps)
            fresh = not self.eps[s] and not self.edges[s]
            self._inside += 1
            try:
                positions = self._repeat(node, s, e)
            finally:
                self._inside -= 1
            if len(self.eps) > first:
                self.regions.append(Region(first, len(self.eps), e, node=node, start=s,
                                           start_moves=self._moves(s) if fresh else None,
                                           positions=tuple(positions)))
            return
        self._build(node, s, e)

    def _build(self, node: Node, s: int, e: int) -> None:
        if isinstance(node, Empty) or (isinstance(node, (Bytes, Seq)) and not (
                node.value if isinstance(node, Bytes) else node.items)):
            self.eps[s].append(e)
        elif isinstance(node, Bytes):
            cur = s
            for k, b in enumerate(node.value):
                nxt = e if k == len(node.value) - 1 else self.new_state()
                self.edges[cur].append((b, b, nxt))
                cur = nxt
        elif isinstance(node, ByteSet):
            for lo, hi in node.ranges:
                self.edges[s].append((lo, hi, e))
        elif isinstance(node, Seq):
            cur = s
            for k, item in enumerate(node.items):
                nxt = e if k == len(node.items) - 1 else self.new_state()
                self.build(item, cur, nxt)
                cur = nxt
        elif isinstance(node, Alt):
            for item in node.items:
                self.build(item, s, e)
        elif isinstance(node, Repeat):
            self._repeat(node, s, e)
        elif isinstance(node, (And, Not)):
            self.embed(self.dfa_of(node), s, e)
        elif isinstance(node, RuleRef):
            raise GrammarError(f"unresolved rule reference {node.name!r} (compile a Grammar, not a bare node)")
        else:
            raise GrammarError(f"unknown IR node {type(node).__name__}")

    def _repeat(self, node: Repeat, s: int, e: int) -> list[tuple[int, int]]:
        """Build `node`; for a bounded repetition, return per repetition (the first state of its
        item, the state after it: the boundary, which is `e` after the last one)."""
        positions: list[tuple[int, int]] = []
        if self.is_empty(node.item):  # only zero repetitions are possible
            self.eps[s].append(e)
            return positions
        cur = s
        for _ in range(node.min):
            nxt = self.new_state()
            positions.append((len(self.eps), nxt))
            self.build(node.item, cur, nxt)
            cur = nxt
        if node.max is None:
            loop = self.new_state()
            self.eps[cur].append(loop)
            self.build(node.item, loop, loop)
            self.eps[loop].append(e)
            return []
        self.eps[cur].append(e)
        for k in range(node.max - node.min):
            nxt = e if k == node.max - node.min - 1 else self.new_state()
            positions.append((len(self.eps), nxt))
            self.build(node.item, cur, nxt)
            if nxt != e:
                self.eps[nxt].append(e)
            cur = nxt
        return positions

    def build_repeat(self, node: Repeat, s: int, e: int) -> list[tuple[int, int]]:
        """`build` for a repetition, returning its positions (see `_repeat`)."""
        return self._repeat(node, s, e) if not self.is_empty(node) else []

    def embed(self, dfa: DFA, s: int, e: int) -> None:
        """Splice a DFA between `s` and `e` (dead state dropped)."""
        n = dfa.num_states
        base = len(self.eps) - 1  # DFA state q (q >= 1) becomes NFA state base + q
        for _ in range(1, n):
            self.new_state()
        self.eps[s].append(base + START)
        for q, ranges in enumerate(_byte_ranges(dfa)):
            if q == DEAD:
                continue
            self.edges[base + q] = [(lo, hi, base + t) for lo, hi, t in ranges]
            if dfa.accepting[q]:
                self.eps[base + q].append(e)
        if not self._inside and n > 1:
            moves = self._moves(s) if self._moves(s) == (1, 0) else None  # just the move into the DFA
            self.regions.append(Region(base + 1, base + n, e, dfa=dfa, start=s, start_moves=moves))

    def _moves(self, q: int) -> tuple[int, int]:
        """(epsilon moves, byte edges) out of state `q`."""
        return len(self.eps[q]), len(self.edges[q])


def _byte_ranges(dfa: DFA) -> list[list[tuple[int, int, int]]]:
    """Per state, its transitions as (lo, hi, target) byte ranges without the dead state (cached)."""
    got = dfa._cache.get("byte_ranges")
    if got is None:
        table = dfa.table
        change = np.ones((table.shape[0], 257), dtype=bool)
        change[:, 1:256] = table[:, 1:] != table[:, :-1]
        got = []
        for q in range(table.shape[0]):
            cuts = np.flatnonzero(change[q]).tolist()
            row = table[q]
            got.append([(lo, hi - 1, int(row[lo])) for lo, hi in zip(cuts[:-1], cuts[1:]) if row[lo] != DEAD])
        dfa._cache["byte_ranges"] = got
    return got
