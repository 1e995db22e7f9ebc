"""Thompson-style NFA built from the IR, and subset construction to a minimal DFA.

`And` / `Not` sub-terms are compiled to DFAs first (product / complement) and embedded
back into the NFA as ordinary states.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DFA, DEAD, START, minimize
from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import (
    Alt, And, ByteSet, Bytes, Empty, Node, Not, Nothing, Repeat, RuleRef, Seq,
)


class NFA:
    """States with epsilon moves and byte-range edges `(lo, hi, target)`."""

    def __init__(self, budget: CompileBudget, dfa_of: Callable[[Node], DFA]):
        self.eps: list[list[int]] = []
        self.edges: list[list[tuple[int, int, int]]] = []
        self.budget = budget
        self.dfa_of = dfa_of

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
        if isinstance(node, Bytes):
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
        elif isinstance(node, Empty):
            self.eps[s].append(e)
        elif isinstance(node, Nothing):
            return
        elif isinstance(node, (And, Not)):
            self.embed(self.dfa_of(node), s, e)
        elif isinstance(node, RuleRef):
            raise GrammarError(f"unresolved rule reference {node.name!r} (compile a Grammar, not a bare node)")
        else:
            raise GrammarError(f"unknown IR node {type(node).__name__}")

    def _repeat(self, node: Repeat, s: int, e: int) -> None:
        cur = s
        for _ in range(node.min):
            nxt = self.new_state()
            self.build(node.item, cur, nxt)
            cur = nxt
        if node.max is None:
            loop = self.new_state()
            self.eps[cur].append(loop)
            self.build(node.item, loop, loop)
            self.eps[loop].append(e)
            return
        self.eps[cur].append(e)
        for k in range(node.max - node.min):
            nxt = e if k == node.max - node.min - 1 else self.new_state()
            self.build(node.item, cur, nxt)
            if nxt != e:
                self.eps[nxt].append(e)
            cur = nxt

    def embed(self, dfa: DFA, s: int, e: int) -> None:
        """Splice a DFA between `s` and `e` (dead state dropped)."""
        n = dfa.num_states
        ids = [0] + [self.new_state() for _ in range(1, n)]
        self.eps[s].append(ids[START])
        table = dfa.table
        for q in range(1, n):
            row = table[q]
            bounds = np.flatnonzero(np.diff(row)) + 1
            starts = np.concatenate([[0], bounds])
            ends = np.concatenate([bounds, [256]]) - 1
            out = self.edges[ids[q]]
            for lo, hi in zip(starts.tolist(), ends.tolist()):
                target = int(row[lo])
                if target != DEAD:
                    out.append((lo, hi, ids[target]))
            if dfa.accepting[q]:
                self.eps[ids[q]].append(e)


def determinize(nfa: NFA, start: int, final: int, budget: CompileBudget) -> DFA:
    """Subset construction over byte classes, then minimisation."""
    budget.check_nfa(len(nfa.eps))
    cuts = {0, 256}
    for out in nfa.edges:
        for lo, hi, _ in out:
            cuts.add(lo)
            cuts.add(hi + 1)
    bounds = sorted(cuts)
    class_start = {b: k for k, b in enumerate(bounds[:-1])}
    class_of_byte = np.zeros(256, dtype=np.int64)
    for k in range(len(bounds) - 1):
        class_of_byte[bounds[k]:bounds[k + 1]] = k
    num_classes = len(bounds) - 1
    class_edges = [[(class_start[lo], int(class_of_byte[hi]), t) for lo, hi, t in out] for out in nfa.edges]

    closures: dict[int, frozenset[int]] = {}
    eps = nfa.eps

    def closure(q: int) -> frozenset[int]:
        got = closures.get(q)
        if got is None:
            seen = {q}
            stack = [q]
            while stack:
                for t in eps[stack.pop()]:
                    if t not in seen:
                        seen.add(t)
                        stack.append(t)
            got = closures[q] = frozenset(seen)
        return got

    empty: frozenset[int] = frozenset()
    index: dict[frozenset[int], int] = {empty: 0}
    sets: list[frozenset[int]] = [empty, closure(start)]
    index[sets[1]] = 1
    rows: list[list[int]] = [[0] * num_classes]
    union_memo: dict[tuple[int, ...], int] = {}
    i = 1
    while i < len(sets):
        if i % 128 == 0:
            budget.check_time("subset construction")
            budget.check_dfa(len(sets), "the grammar automaton")
        moves: list[list[int]] = [[] for _ in range(num_classes)]
        for q in sets[i]:
            for clo, chi, t in class_edges[q]:
                for k in range(clo, chi + 1):
                    moves[k].append(t)
        row = [0] * num_classes
        for k, targets in enumerate(moves):
            if not targets:
                continue
            key = tuple(sorted(set(targets)))
            sid = union_memo.get(key)
            if sid is None:
                target_set = frozenset().union(*(closure(t) for t in key))
                sid = index.get(target_set)
                if sid is None:
                    sid = index[target_set] = len(sets)
                    sets.append(target_set)
                union_memo[key] = sid
            row[k] = sid
        rows.append(row)
        i += 1
    table_k = np.array(rows, dtype=np.int64)
    accepting = np.fromiter((final in st for st in sets), dtype=bool, count=len(sets))
    budget.check_dfa(len(sets), "the grammar automaton")
    return minimize(table_k, accepting, 1, class_of_byte)
