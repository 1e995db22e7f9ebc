"""Byte-level DFAs as numpy tables: subset construction, minimisation, products, complement.

A `DFA` has `table[state, byte] -> state` (int32, shape [num_states, 256]); state 0 is the
dead state (empty language, loops to itself) and state 1 is the start state.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from formwork.grammar._minimize import minimize as _minimize
from formwork.grammar._product import product as _product
from formwork.grammar.budget import CompileBudget, active_budget

DEAD = 0
START = 1


@dataclass(eq=False)
class DFA:
    """A complete, minimal byte DFA; `table` is int32 [num_states, 256].  One made from byte
    classes (`from_classes`) writes its byte table when first read: a large automaton that is
    only an operand of products and minimisation (which work over classes) never needs it."""

    _table: np.ndarray | None
    accepting: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    lazy = False

    @classmethod
    def from_classes(cls, class_of_byte: np.ndarray, table_k: np.ndarray, accepting: np.ndarray) -> "DFA":
        """The DFA whose rows are `table_k` [S, K] over the byte classes `class_of_byte` [256]."""
        dfa = cls(None, accepting)
        dfa._cache["classes"] = (class_of_byte, table_k)
        return dfa

    @property
    def table(self) -> np.ndarray:
        if self._table is None:
            class_of_byte, table_k = self._cache["classes"]
            self._table = table_k.take(np.asarray(class_of_byte, dtype=np.intp), axis=1)
        return self._table

    @property
    def num_states(self) -> int:
        return int(self.accepting.shape[0])

    # the interface LazyDFA shares: rows are always available here
    def ensure(self, states: np.ndarray | list[int]) -> None:
        """No-op: every row of an eager DFA exists."""

    def ensure_one(self, s: int) -> None:
        """No-op: every row of an eager DFA exists."""

    def row(self, s: int) -> np.ndarray:
        return self.table[s]

    def class_row(self, s: int) -> np.ndarray:
        return self.byte_classes()[1][s]

    def walk_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, None]:
        """(rows over classes, class_of_byte, row-built flags, accepting flags, no subset core)
        for the native trie walk; here the classes are the bytes themselves."""
        got = self._cache.get("walk_tables")
        if got is None:
            got = self._cache["walk_tables"] = (
                np.ascontiguousarray(self.table, dtype=np.int32), np.arange(256, dtype=np.int32),
                np.ones(self.num_states, dtype=bool), np.ascontiguousarray(self.accepting, dtype=bool), None)
        return got

    def state_key(self, s: int) -> tuple[bytes, int]:
        """Names state `s` for state-level caches: a content hash of the canonically numbered
        table (equal automata share entries) and the state."""
        got = self._cache.get("fingerprint")
        if got is None:
            h = hashlib.blake2b(self.table.tobytes(), digest_size=16)
            h.update(np.packbits(self.accepting).tobytes())
            got = self._cache["fingerprint"] = h.digest()
        return got, s

    def walk(self, state: int, data: bytes) -> int:
        """State after consuming `data` from `state` (DEAD if it died)."""
        table = self.table
        for b in data:
            state = int(table[state, b])
            if state == DEAD:
                return DEAD
        return state

    def accepts(self, data: bytes) -> bool:
        return bool(self.accepting[self.walk(START, data)])

    def byte_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(class_of_byte [256], compressed table [S, K]): bytes in one class move every state
        alike (classes need not be maximal)."""
        if "classes" not in self._cache:
            class_of_byte, representatives = classes_of(self.table.T)
            compressed = np.ascontiguousarray(self.table[:, representatives])
            self._cache["classes"] = (class_of_byte.astype(np.int32), compressed)
        return self._cache["classes"]

    def is_empty(self) -> bool:
        """True when the language is empty (the start state can only die)."""
        return not bool(self.accepting[START]) and bool((self.table[START] == DEAD).all())


def classes_of(per_byte: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte classes of `per_byte` (a row per byte: bytes with equal rows share a class), numbered
    by their smallest byte so that equal partitions get equal numbers: (class of each byte [256],
    the smallest byte of each class, ascending), both int64."""
    _, first, inverse = np.unique(per_byte, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)].astype(np.int64), first[order].astype(np.int64)


def minimize(table_k: np.ndarray, accepting: np.ndarray, start: int, class_of_byte: np.ndarray) -> DFA:
    """The minimal DFA (in C, `_minimize.c`): states that cannot reach acceptance merge into the
    dead state, the rest by partition refinement; numbered DEAD=0, START=1, then breadth-first
    over byte order, so equal languages get equal tables.  `table_k` is over byte classes.  Inside a
    compile (`CompileBudget.active`) the refinement stops when the compile's budget runs out."""
    table_k = np.ascontiguousarray(table_k, dtype=np.int32)
    budget = active_budget()
    seconds = budget.seconds_left() if budget is not None else None
    got = _minimize(table_k, np.ascontiguousarray(accepting, dtype=np.uint8), start, -1.0 if seconds is None else seconds)
    if got is None:
        budget.out_of_time("DFA minimisation")
    raw_table, raw_accepting = got
    final = np.frombuffer(raw_table, dtype=np.int32).reshape(-1, table_k.shape[1]).copy()
    # byte classes (contiguous byte intervals, numbered by their first byte) come for free here
    return DFA.from_classes(np.asarray(class_of_byte, dtype=np.int64), final,
                            np.frombuffer(raw_accepting, dtype=bool).copy())


def product(a: DFA, b: DFA, op: str, budget: CompileBudget) -> DFA:
    """Intersection (op='and') or union (op='or') of two DFAs by the product construction, over
    the byte classes both operands respect (a row per state pair is a few entries, not 256)."""
    rows, codes, class_of_byte = product_pairs(a, b, budget)
    nb = b.num_states
    acc_a = a.accepting[codes // nb]
    acc_b = b.accepting[codes % nb]
    accepting = (acc_a & acc_b) if op == "and" else (acc_a | acc_b)
    return minimize(rows, accepting, 0, class_of_byte)


def product_pairs(a: DFA, b: DFA, budget: CompileBudget) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reachable state pairs of two DFAs from (START, START), numbered 0, 1, ... breadth-first:
    (a row of pair numbers per pair over the joint byte classes, each pair's code
    a_state * b.num_states + b_state, the joint class of each byte)."""
    nb = b.num_states
    class_a, table_a = a.byte_classes()
    class_b, table_b = b.byte_classes()
    class_of_byte, representatives = classes_of(np.stack([class_a, class_b], axis=1))
    rows_a = np.ascontiguousarray(table_a[:, class_a[representatives]], dtype=np.int32)
    rows_b = np.ascontiguousarray(table_b[:, class_b[representatives]], dtype=np.int32)
    seconds = budget.seconds_left()
    rows, pairs, why = _product(rows_a, rows_b, nb, budget.max_dfa_states, -1.0 if seconds is None else seconds)
    if why:  # out of time or past the state budget: the budget says which, as it always does
        budget.check_time("automaton product")
        budget.check_dfa(budget.max_dfa_states + 1, "an intersection/complement")
    codes = np.frombuffer(pairs, dtype=np.int64)
    return np.frombuffer(rows, dtype=np.int32).reshape(len(codes), -1), codes, class_of_byte


def complement(a: DFA, universe: DFA, budget: CompileBudget) -> DFA:
    """Strings of `universe` that `a` rejects."""
    flipped = DFA(a.table, ~a.accepting)
    return product(flipped, universe, "and", budget)
