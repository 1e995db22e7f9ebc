"""The C NFA builder finds shared marks (and lexemes) by the hash cached in a node's `_hash` slot,
read as `hash()` reads what `__hash__` returns: -1 as -2, an int past 64 bits by its own hash.
Whatever the cached value, a mark in the table is built once per end state, and one that is not
(an equal node absent from the table, a cached hash that disagrees) is built at each use."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import formwork.grammar.nfa as nfa_module
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.ir import Alt, Bytes, Repeat, Seq
from formwork.grammar.nfa import NFA

_HEADS = (b"x", b"y", b"z")


def _mark(cached: int | None) -> Repeat:
    """A fresh Repeat{1,1} of a small sub-language whose `_hash` slot holds `cached` (None: not
    yet hashed)."""
    mark = Repeat(Seq((Bytes(b"ab"), Alt((Bytes(b"c"), Bytes(b"de"))))), 1, 1)
    if cached is not None:
        object.__setattr__(mark, "_hash", cached)
    return mark


def _states(monkeypatch: pytest.MonkeyPatch, mark: Repeat, table: dict) -> int:
    """The NFA states of three alternatives that each end with `mark`, with `table` as the
    builder's table of marks."""
    monkeypatch.setattr(nfa_module, "shared_marks", lambda: table)
    node = Alt(tuple(Seq((Bytes(h), mark)) for h in _HEADS))
    return NFA(node, CompileBudget(), AutomatonBuilder().eager).num_states


@settings(deadline=None, max_examples=40)
@given(st.one_of(st.none(), st.sampled_from([-1, -2, 0, 2**63 - 1, -(2**63)]),
                 st.integers(-(2**80), 2**80)))
def test_a_mark_is_found_by_its_cached_hash(cached: int | None) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        mark = _mark(cached)
        table = {mark: mark}  # inserted under hash(mark), which reads the slot
        if cached is not None:
            fits = -(2**63) <= cached < 2**63  # taken as it is, else by the int's own hash
            assert hash(mark) == (-2 if cached == -1 else cached if fits else hash(cached))
        shared = _states(monkeypatch, mark, table)
        unshared = _states(monkeypatch, _mark(cached), {})
        reference = _states(monkeypatch, (plain := _mark(None)), {plain: plain})
    assert shared == reference < unshared


def test_a_mark_whose_cached_hash_disagrees_is_not_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """An equal node is found only under the hash its slot gives: the table is looked up by that
    hash, not by recomputing the structure's."""
    stored = _mark(None)
    table = {stored: stored}
    equal = _mark(hash(stored) ^ 1)  # equal to `stored`, but its slot says another hash
    assert equal == stored and hash(equal) != hash(stored)
    assert _states(monkeypatch, equal, table) > _states(monkeypatch, _mark(None), table)
