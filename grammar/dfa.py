"""Byte-level DFAs as numpy tables: subset construction, minimisation, products, complement.

A `DFA` has `table[state, byte] -> state` (int32, shape [num_states, 256]); state 0 is the
dead state (empty language, loops to itself) and state 1 is the start state.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from formwork.grammar.budget import CompileBudget

DEAD = 0
START = 1


@dataclass(eq=False)
class DFA:
    """A complete, minimal byte DFA; `table` is int32 [num_states, 256]."""

    table: np.ndarray
    accepting: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    lazy = False

    @property
    def num_states(self) -> int:
        return int(self.table.shape[0])

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
            _, first, inverse = np.unique(self.table.T, axis=0, return_index=True, return_inverse=True)
            # number classes by their smallest byte so the compression is canonical
            order = np.argsort(first)
            rank = np.empty_like(order)
            rank[order] = np.arange(len(order))
            class_of_byte = rank[inverse.reshape(-1)].astype(np.int32)
            compressed = np.ascontiguousarray(self.table[:, np.sort(first)])
            self._cache["classes"] = (class_of_byte, compressed)
        return self._cache["classes"]

    def is_empty(self) -> bool:
        """True when the language is empty (the start state can only die)."""
        return not bool(self.accepting[START]) and bool((self.table[START] == DEAD).all())


_MIX = np.uint64(0x9E3779B97F4A7C15)
_MAX_MOORE_ROUNDS = 8


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, vectorised (wrapping uint64 arithmetic)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _refine(table_k: np.ndarray, accepting: np.ndarray) -> np.ndarray | None:
    """Moore partition refinement with hashed signatures; None if it did not converge quickly."""
    n, k = table_k.shape
    weights = _mix(np.arange(1, k + 1, dtype=np.uint64) * _MIX)
    part = accepting.astype(np.int64)
    count = int(part.max()) + 1 if n else 0
    with np.errstate(over="ignore"):
        for _ in range(_MAX_MOORE_ROUNDS):
            succ = part[table_k].astype(np.uint64)
            sig = _mix((succ * weights).sum(axis=1) + part.astype(np.uint64) * _MIX)
            _, inverse = np.unique(sig, return_inverse=True)
            inverse = inverse.reshape(-1)
            new_count = int(inverse.max()) + 1 if n else 0
            part = inverse
            if new_count == count:
                return part
            count = new_count
    return None


def minimize(table_k: np.ndarray, accepting: np.ndarray, start: int, class_of_byte: np.ndarray) -> DFA:
    """Trim (merge every state that cannot reach acceptance into one dead state), minimise when
    partition refinement converges within a few rounds, and number states DEAD=0, START=1."""
    n = table_k.shape[0]
    live = _coaccessible(table_k, accepting)
    if not live[start]:
        return DFA(np.zeros((2, 256), dtype=np.int32), np.zeros(2, dtype=bool))
    # state n is a fresh sink standing for every non-live state
    table_k = np.where(live[table_k], table_k, n)
    table_k = np.vstack([table_k, np.full((1, table_k.shape[1]), n, dtype=table_k.dtype)])
    accepting = np.append(accepting & live, False)
    keep = np.append(live, True)
    part = _refine(table_k, accepting)
    if part is None:  # plain trim: drop non-live states
        part = np.cumsum(keep) - 1
    count = int(part.max()) + 1
    reps = np.zeros(count, dtype=np.int64)
    reps[part[keep]] = np.flatnonzero(keep)
    q_table = part[table_k[reps]]
    q_accept = accepting[reps]
    dead, start_q = int(part[n]), int(part[start])
    order = np.concatenate([[dead, start_q], np.setdiff1d(np.arange(count), [dead, start_q])])
    relabel = np.empty(count, dtype=np.int64)
    relabel[order] = np.arange(count)
    final = relabel[q_table[order]].astype(np.int32)
    dfa = DFA(np.ascontiguousarray(final[:, class_of_byte]), q_accept[order].copy())
    # byte classes (contiguous byte intervals, numbered by their first byte) come for free here
    dfa._cache["classes"] = (np.asarray(class_of_byte, dtype=np.int64), np.ascontiguousarray(final))
    return dfa


def _coaccessible(table: np.ndarray, accepting: np.ndarray) -> np.ndarray:
    """States from which an accepting state is reachable (reverse BFS over a CSR of predecessors)."""
    n = table.shape[0]
    src = np.repeat(np.arange(n), table.shape[1])
    dst = table.reshape(-1)
    pairs = np.unique(dst.astype(np.int64) * n + src)
    dst_sorted, src_sorted = np.divmod(pairs, n)
    offsets = np.searchsorted(dst_sorted, np.arange(n + 1))
    live = accepting.copy()
    frontier = np.flatnonzero(live)
    while len(frontier):
        lo, hi = offsets[frontier], offsets[frontier + 1]
        sizes = hi - lo
        total = int(sizes.sum())
        if total == 0:
            break
        idx = np.repeat(lo - np.cumsum(np.concatenate([[0], sizes[:-1]])), sizes) + np.arange(total)
        preds = src_sorted[idx]
        preds = np.unique(preds[~live[preds]])
        live[preds] = True
        frontier = preds
    return live


def product(a: DFA, b: DFA, op: str, budget: CompileBudget) -> DFA:
    """Intersection (op='and') or union (op='or') of two DFAs by the product construction."""
    nb = b.num_states
    index: dict[int, int] = {}
    pairs: list[int] = []
    rows: list[np.ndarray] = []

    def intern(code: int) -> int:
        if code not in index:
            index[code] = len(pairs)
            pairs.append(code)
        return index[code]

    intern(START * nb + START)
    i = 0
    while i < len(pairs):
        if i % 256 == 0:
            budget.check_time("automaton product")
            budget.check_dfa(len(pairs), "an intersection/complement")
        sa, sb = divmod(pairs[i], nb)
        codes = a.table[sa].astype(np.int64) * nb + b.table[sb]
        uniq, inv = np.unique(codes, return_inverse=True)
        ids = np.fromiter((intern(int(c)) for c in uniq), dtype=np.int64, count=len(uniq))
        rows.append(ids[inv])
        i += 1
    codes = np.array(pairs, dtype=np.int64)
    acc_a = a.accepting[codes // nb]
    acc_b = b.accepting[codes % nb]
    accepting = (acc_a & acc_b) if op == "and" else (acc_a | acc_b)
    table = np.vstack(rows)
    return _minimize_full(table, accepting, 0)


def complement(a: DFA, universe: DFA, budget: CompileBudget) -> DFA:
    """Strings of `universe` that `a` rejects."""
    flipped = DFA(a.table, ~a.accepting)
    return product(flipped, universe, "and", budget)


def _minimize_full(table256: np.ndarray, accepting: np.ndarray, start: int) -> DFA:
    _, first, inverse = np.unique(table256.T, axis=0, return_index=True, return_inverse=True)
    cols = np.sort(first)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    class_of_byte = rank[inverse.reshape(-1)]
    return minimize(table256[:, cols], accepting, start, class_of_byte)
