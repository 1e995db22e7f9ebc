"""DFA products over joint byte classes (`dfa.product`, `dfa.complement`): the language of the
intersection / union by brute force, and the very table the 256-wide construction gives (both
end in the canonical minimal DFA)."""
from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings, strategies as st

from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DEAD, DFA, START, complement, minimize, product

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
