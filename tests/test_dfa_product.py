"""DFA products over joint byte classes (`dfa.product`, `dfa.complement`): the language of the
intersection / union by brute force, and the very table the 256-wide construction gives (both
end in the canonical minimal DFA)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar._product import product as raw_product
from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DEAD, DFA, START, complement, minimize, product
from formwork.grammar.errors import GrammarBudgetError

ALPHABET = b"ab\x00\xff"  # bytes of different classes at both ends of the byte range


@st.composite
def dfas(draw) -> DFA:
    """A random DFA over ALPHABET (every other byte dead), dead state 0, start 1."""
    n = draw(st.integers(2, 6))
    table = np.zeros((n, 256), dtype=np.int32)
    for q in range(1, n):
        for b in ALPHABET:
            table[q, b] = draw(st.integers(0, n - 1))
    accepting = np.array([False] + draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1)))
    return DFA(table, accepting)


def _words(length: int):
    for n in range(length + 1):
        yield from (bytes(w) for w in itertools.product(ALPHABET, repeat=n))


def _reference(a: DFA, b: DFA, op: str) -> DFA:
    """The product over all 256 bytes, one state per reachable pair, then minimised."""
    nb = b.num_states
    index, pairs, rows = {START * nb + START: 0}, [START * nb + START], []
    i = 0
    while i < len(pairs):
        sa, sb = divmod(pairs[i], nb)
        row = []
        for x, y in zip(a.table[sa].tolist(), b.table[sb].tolist()):
            row.append(index.setdefault(x * nb + y, len(pairs)))
            if row[-1] == len(pairs):
                pairs.append(x * nb + y)
        rows.append(row)
        i += 1
    codes = np.array(pairs)
    acc_a, acc_b = a.accepting[codes // nb], b.accepting[codes % nb]
    accepting = (acc_a & acc_b) if op == "and" else (acc_a | acc_b)
    return minimize(np.array(rows, dtype=np.int32), accepting, 0, np.arange(256))


@settings(deadline=None, max_examples=150)
@given(dfas(), dfas(), st.sampled_from(["and", "or"]))
def test_product_language_and_table(a, b, op):
    out = product(a, b, op, CompileBudget().start())
    for word in _words(4):
        both = (a.accepts(word) and b.accepts(word)) if op == "and" else (a.accepts(word) or b.accepts(word))
        assert out.accepts(word) == both, word
    ref = _reference(a, b, op)
    assert np.array_equal(out.table, ref.table) and np.array_equal(out.accepting, ref.accepting)
    assert (out.table[DEAD] == DEAD).all() and not out.accepting[DEAD]


@settings(deadline=None, max_examples=60)
@given(dfas(), dfas())
def test_complement_within_a_universe(a, universe):
    out = complement(a, universe, CompileBudget().start())
    for word in _words(4):
        assert out.accepts(word) == (universe.accepts(word) and not a.accepts(word)), word


def _chain(n: int) -> DFA:
    """Strings of 'a' of length at most n: a chain of n + 2 states."""
    table = np.zeros((n + 2, 256), dtype=np.int32)
    table[1:n + 1, ord("a")] = np.arange(2, n + 2)
    return DFA(table, np.array([False] + [True] * (n + 1)))


def test_a_product_past_the_state_budget_is_a_budget_error():
    with pytest.raises(GrammarBudgetError, match="an intersection/complement needs more than 50 DFA states"):
        product(_chain(200), _chain(300), "and", CompileBudget(max_dfa_states=50).start())
    assert product(_chain(200), _chain(300), "and", CompileBudget(max_dfa_states=500).start()).num_states == 202


def test_a_product_out_of_time_is_a_budget_error():
    with pytest.raises(GrammarBudgetError, match="time budget of 0 s during automaton product"):
        product(_chain(200), _chain(300), "and", CompileBudget(max_seconds=0).start())
    assert product(_chain(20), _chain(30), "or", CompileBudget()).num_states == 32  # not started: no deadline


@pytest.mark.parametrize("rows_a, rows_b, nb", [
    (np.zeros((2, 1), dtype=np.int32), np.zeros((2, 2), dtype=np.int32), 2),  # class counts differ
    (np.array([[0], [5]], dtype=np.int32), np.zeros((2, 1), dtype=np.int32), 2),  # a target past a's states
    (np.zeros((2, 1), dtype=np.int32), np.zeros((2, 1), dtype=np.int32), 1),  # fewer than two states
])
def test_malformed_product_input_is_a_value_error(rows_a, rows_b, nb):
    with pytest.raises(ValueError, match="product"):
        raw_product(rows_a, rows_b, nb, 100, -1.0)
