"""A lazy DFA stopped by its budget stays consistent: every state its rows lead to is recorded.

Regression: a budget stop in the middle of expanding rows used to leave the states those rows
had just interned unrecorded (`num_states` lagging behind the builder's sets); a later
`materialize` of the same (shared, memoised) automaton then handed `minimize` a table pointing
past its last row ("minimize: a transition is out of range").
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.regex_parser import regex


def _rows_in_range(lazy) -> bool:
    classes, rows = lazy.byte_classes()
    expanded = lazy._expanded[: lazy.num_states]
    return bool((rows[expanded] < lazy.num_states).all())


@settings(max_examples=25, deadline=None)
@given(limit=st.integers(3, 25), bound=st.integers(30, 300))
def test_materialize_after_a_budget_stop(limit: int, bound: int) -> None:
    pattern = f"[a-c]{{0,{bound}}}x"
    lazy = AutomatonBuilder(CompileBudget(max_dfa_states=limit)).dfa(regex(pattern))
    with pytest.raises(GrammarBudgetError):
        lazy.materialize()
    assert _rows_in_range(lazy)
    with pytest.raises(GrammarBudgetError):  # the same budget stops it again, never a ValueError
        lazy.materialize()
    lazy._b.budget.max_dfa_states = 10 * bound  # a later compile with room finishes the job exactly
    dfa = lazy.materialize()
    reference = AutomatonBuilder().eager(regex(pattern))
    assert (dfa.table == reference.table).all() and (dfa.accepting == reference.accepting).all()
    for text in (b"x", b"a" * bound + b"x", b"a" * (bound + 1) + b"x", b"abc"):
        assert dfa.accepts(text) == (text.endswith(b"x") and len(text) <= bound + 1 and b"x" not in text[:-1])


def test_state_of_records_what_it_interned_before_the_stop() -> None:
    lazy = AutomatonBuilder(CompileBudget(max_dfa_states=2)).dfa(regex("[a-c]{0,40}"))
    with pytest.raises(GrammarBudgetError):
        lazy.walk(1, b"abcabc")
    assert lazy.num_states == len(lazy._b.sets)
    with pytest.raises(GrammarBudgetError):
        lazy.state_of(frozenset({0}))  # a set no walk made: interned, then over the budget
    assert lazy.num_states == len(lazy._b.sets)
    assert _rows_in_range(lazy)
