"""DFA minimisation (`grammar/native/_minimize.c` via `dfa.minimize`): same language, fewest states,
canonical numbering, malformed input as ValueError."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar._minimize import minimize as raw_minimize
from formwork.grammar.dfa import DEAD, START, minimize


@st.composite
def dfas(draw):
    n = draw(st.integers(2, 7))
    k = draw(st.integers(1, 3))
    table = np.array(draw(st.lists(st.integers(0, n - 1), min_size=n * k, max_size=n * k)), dtype=np.int32).reshape(n, k)
    table[0] = 0  # state 0 dead, as the lazy automata make it
    accepting = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    accepting[0] = False
    return table, accepting


def _accepts(table: np.ndarray, accepting: np.ndarray, start: int, word: tuple[int, ...]) -> bool:
    state = start
    for c in word:
        state = int(table[state, c])
    return bool(accepting[state])


def _words(k: int, length: int):
    for n in range(length + 1):
        yield from itertools.product(range(k), repeat=n)


@settings(deadline=None, max_examples=150)
@given(dfas())
def test_same_language_fewest_states(dfa):
    table, accepting = dfa
    n, k = table.shape
    out = minimize(table, accepting, START, np.zeros(256, dtype=np.int64))  # one byte class per test class
    final, flags = out._cache["classes"][1], out.accepting
    words = list(_words(k, n + 1))
    for word in words:
        assert _accepts(table, accepting, START, word) == _accepts(final, flags, START, word)
    assert (final[DEAD] == DEAD).all() and not flags[DEAD]
    # Myhill-Nerode: live states that no word of length <= n tells apart are one state
    reachable = {tuple(_accepts(table, accepting, s, w) for w in words) for s in _reached(table)}
    live = {sig for sig in reachable if any(sig)}
    assert len(final) == (1 + len(live) if live else 2)  # the dead state and one per live class


def _reached(table: np.ndarray) -> set[int]:
    seen, todo = {START}, [START]
    while todo:
        for t in table[todo.pop()].tolist():
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


@settings(deadline=None, max_examples=80)
@given(dfas(), st.randoms(use_true_random=False))
def test_numbering_is_canonical(dfa, rng):
    """Renumbering the input states (start kept first after the dead state) changes nothing."""
    table, accepting = dfa
    n = len(table)
    order = [0, 1, *rng.sample(range(2, n), n - 2)]
    new_of = np.empty(n, dtype=np.int32)
    new_of[order] = np.arange(n)
    permuted = new_of[table[order]]
    a = raw_minimize(np.ascontiguousarray(table), accepting.astype(np.uint8), START)
    b = raw_minimize(np.ascontiguousarray(permuted), accepting[order].astype(np.uint8), START)
    assert a == b


def test_malformed_input_is_a_value_error():
    with pytest.raises(ValueError, match="out of range"):
        raw_minimize(np.array([[0], [5]], dtype=np.int32), np.zeros(2, dtype=np.uint8), 1)
    with pytest.raises(ValueError, match="inconsistent"):
        raw_minimize(np.array([[0], [1]], dtype=np.int32), np.zeros(2, dtype=np.uint8), 7)


def _moore_classes(table: np.ndarray, accepting: np.ndarray) -> int:
    """Reference: the number of states of the minimal DFA (dead included) by plain Moore refinement
    over the states reachable from START."""
    reached = sorted(_reached(table))
    live = set(s for s in reached if accepting[s])
    changed = True
    while changed:  # states that reach acceptance
        changed = False
        for s in reached:
            if s not in live and any(int(t) in live for t in table[s]):
                live.add(s)
                changed = True
    if START not in live:
        return 2
    block = {s: (1 + bool(accepting[s])) if s in live else 0 for s in reached}
    while True:
        sig = {s: (block[s], *(block[int(t)] for t in table[s])) for s in reached}
        ids = {v: i for i, v in enumerate(sorted(set(sig.values())))}
        new = {s: ids[sig[s]] for s in reached}
        if len(set(new.values())) == len(set(block.values())):
            return len(set(new.values())) + (0 if any(s not in live for s in reached) else 1)
        block = new


@st.composite
def larger_dfas(draw):
    n = draw(st.integers(8, 80))
    k = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    # long chains (what bounded repetitions make) with some back edges: many refinement rounds
    table = np.minimum(np.arange(n)[:, None] + rng.integers(0, 3, size=(n, k)), n - 1).astype(np.int32)
    back = rng.random((n, k)) < 0.1
    table[back] = rng.integers(1, n, size=int(back.sum()))
    table[0] = 0
    accepting = rng.random(n) < 0.3
    accepting[0] = False
    return table, accepting, rng


@settings(deadline=None, max_examples=60)
@given(larger_dfas())
def test_larger_automata_minimize_like_the_reference(dfa):
    table, accepting, rng = dfa
    n, k = table.shape
    out = minimize(table, accepting, START, np.zeros(256, dtype=np.int64))
    final, flags = out._cache["classes"][1], out.accepting
    assert len(final) == _moore_classes(table, accepting)
    for _ in range(200):  # the same language on random words
        word = tuple(rng.integers(0, k, size=int(rng.integers(0, 2 * n))).tolist())
        assert _accepts(table, accepting, START, word) == _accepts(final, flags, START, word)


def test_a_long_chain_minimizes_in_one_pass():
    """A chain of 20,000 states (a bounded repetition's shape), which Moore refinement needed a
    round per state for: chain state s accepts a^j for j >= n - 1 - s, so all n - 1 of them
    differ, and 'b' leads to the dead state."""
    n = 20_000
    table = np.zeros((n, 2), dtype=np.int32)
    table[1:, 0] = np.minimum(np.arange(2, n + 1), n - 1)
    accepting = np.zeros(n, dtype=bool)
    accepting[n - 1] = True
    out = minimize(table, accepting, START, np.zeros(256, dtype=np.int64))
    assert out.num_states == n  # a^k for k = n - 2: every chain state is distinct, plus dead
