"""Large automata stay interruptible and cheap: `expand_all` checks the budget between chunks of
states, and `minimize` keeps its result over byte classes until someone reads the byte table.

Regression (issue 22's 1.1x budget target): a budget-bound compile at a 1 s budget stopped at 1.28x,
after an unchecked stretch of ~0.3-0.6 s: a breadth-first round of subset construction that built
every known state at once, and the [65k, 256] byte table minimisation wrote (twice) for a product
operand that never needed it.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from formwork.grammar import lazy_dfa
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DFA, START
from formwork.grammar.regex_parser import regex


class _CountingClock:
    """A fake CPU clock that never runs out and counts its reads (each budget check reads it once)."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return 0.0


def test_expand_all_checks_the_budget_between_chunks(monkeypatch) -> None:
    monkeypatch.setattr(lazy_dfa, "_EXPAND_CHUNK", 16)
    clock = _CountingClock()
    budget = CompileBudget(cpu_clock=clock, wall_clock=lambda: 0.0).start()
    lazy = AutomatonBuilder(budget).dfa(regex("[ab]*a[ab]{8}"))  # 2^9 states: the 9th symbol from the end
    clock.reads = 0
    lazy.expand_all(budget)
    assert lazy.num_states > 300
    assert clock.reads >= lazy.num_states // 16  # one check per chunk at least


@settings(max_examples=30, deadline=None)
@given(pattern=st.sampled_from(["[a-c]{0,12}x", "(ab|cd)*e?", "[0-9]{2,5}(\\.[0-9]+)?", "\\w+@[a-z]+", "a|b|[^x]y"]))
def test_minimised_dfa_writes_its_byte_table_on_first_read(pattern: str) -> None:
    dfa = AutomatonBuilder().eager(regex(pattern))
    assert dfa._table is None  # minimisation left it over byte classes
    class_of_byte, table_k = dfa.byte_classes()
    assert dfa.num_states == table_k.shape[0] == len(dfa.accepting)
    table = dfa.table
    assert table.shape == (dfa.num_states, 256) and table.flags["C_CONTIGUOUS"]
    assert (table == table_k[:, class_of_byte]).all()
    copy = DFA(table.copy(), dfa.accepting.copy())  # an eager DFA built from its byte table agrees
    for text in (b"", b"x", b"abcx", b"12.5", b"ab@cd", b"by", b"ababe"):
        state = START
        assert copy.accepts(text) == dfa.accepts(text)
        assert copy.walk(state, text) == dfa.walk(state, text)
    assert copy.state_key(1) == dfa.state_key(1)  # same content, same cache key


def test_product_of_large_operands_never_writes_their_byte_tables() -> None:
    builder = AutomatonBuilder()
    a = builder.eager(regex("[a-d]{0,7}"))
    b = builder.eager(regex("[b-e]{2,9}"))
    from formwork.grammar.dfa import product
    both = product(a, b, "and", CompileBudget())
    assert a._table is None and b._table is None
    assert both.accepts(b"bcd") and not both.accepts(b"a") and not both.accepts(b"e" * 3)
    assert np.array_equal(both.accepting, both.accepting.astype(bool))
