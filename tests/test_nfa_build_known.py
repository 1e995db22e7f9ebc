"""The C NFA builder takes the automata an `AutomatonBuilder` built before from its tables
(`build`'s `known`) instead of calling `embedded` / `lexeme_template`: the same automata, so the
same NFA and regions, and the call where the tables do not decide (a miss, an And that may count)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.counted_dfa import COUNT_FROM, CountedDFA
from formwork.grammar.ir import And, Node, Not, Repeat, lit, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.lexemes import _LEXEMES, _LEXEMES_LOCK, lexeme
from formwork.grammar.nfa import NFA
from formwork.grammar.regex_parser import regex

_WORD = Repeat(chars([("a", "z")]), 1, None)


@contextmanager
def _marked(*nodes: Repeat) -> Iterator[None]:
    for node in nodes:
        lexeme(node)
    try:
        yield
    finally:
        with _LEXEMES_LOCK:
            for node in nodes:
                _LEXEMES.pop(node, None)


def _counting(fn: Callable[[Node], object]) -> tuple[Callable[[Node], object], list[Node]]:
    calls: list[Node] = []

    def counted(node: Node) -> object:
        calls.append(node)
        return fn(node)

    return counted, calls


def _document() -> Node:
    """Lexemes (one twice, one an equal copy), an And, a Not, and an And that counts."""
    digits = Repeat(chars([("0", "9")]), 1, None)
    counts = And(regex("[a-z]+"), Repeat(chars([("a", "z")]), 0, COUNT_FROM + 5))
    return seq(lit("<"), _WORD, lit(":"), Repeat(_WORD.item, 1, None), lit(";"), digits,
               And(regex("[a-z]{2,9}"), regex("[a-m]+")), Not(regex("x.*")), lit("|"), counts, lit(">"))


def _same(got: NFA, want: NFA) -> None:
    assert got.moves == want.moves and got.total_states == want.total_states and got.empty == want.empty
    assert len(got.region_tuples) == len(want.region_tuples)
    for g, w in zip(got.region_tuples, want.region_tuples):
        assert g[:5] == w[:5] and g[5] is w[5] and g[6] is w[6] and g[7:] == w[7:]


@pytest.mark.parametrize("forked", [False, True])
def test_the_known_automata_are_taken_and_are_those_the_calls_give(forked: bool) -> None:
    shared = AutomatonBuilder()
    builder = shared.fork(CompileBudget().start()) if forked else shared
    with _marked(_WORD, Repeat(chars([("0", "9")]), 1, None)):
        node = _document()
        want = NFA(node, builder.budget, builder.embedded, builder.lexeme_template)  # builds them all
        dfa_of, dfa_calls = _counting(builder.embedded)
        template_of, template_calls = _counting(builder.lexeme_template)
        got = NFA(node, builder.budget, dfa_of, template_of, known=builder._known())
    _same(got, want)
    counted = [r[5] for r in got.region_tuples if isinstance(r[5], CountedDFA)]
    assert len(counted) == 1 and dfa_calls == [node.items[-2]]  # only the And that counts is asked for
    assert template_calls == []


def test_an_and_that_counts_is_asked_for_even_where_its_dfa_is_known() -> None:
    builder = AutomatonBuilder()
    counts = And(regex("[a-z]+"), Repeat(chars([("a", "z")]), 0, COUNT_FROM))
    builder.eager(counts)  # its complete DFA is in the table: `embedded` still gives the counting one
    node = seq(lit("<"), counts, lit(">"))
    got = NFA(node, builder.budget, builder.embedded, builder.lexeme_template, known=builder._known())
    assert [type(r[5]) for r in got.region_tuples] == [CountedDFA]


def test_a_miss_calls_back_and_its_automaton_is_known_after() -> None:
    builder = AutomatonBuilder()
    with _marked(_WORD):
        node = seq(lit("<"), _WORD, And(regex("[a-z]{2,9}"), regex("[a-m]+")), lit(">"))
        dfa_of, dfa_calls = _counting(builder.embedded)
        template_of, template_calls = _counting(builder.lexeme_template)
        first = NFA(node, builder.budget, dfa_of, template_of, known=builder._known())
        second = NFA(node, builder.budget, dfa_of, template_of, known=builder._known())
    assert len(dfa_calls) == 1 and len(template_calls) == 1
    _same(second, first)


def test_a_bound_below_count_from_is_taken_from_the_table() -> None:
    builder = AutomatonBuilder()
    small = And(regex("[a-z]+"), Repeat(chars([("a", "z")]), 0, COUNT_FROM - 1))
    node = seq(lit("<"), small, lit(">"))
    NFA(node, builder.budget, builder.embedded, builder.lexeme_template)
    dfa_of, calls = _counting(builder.embedded)
    got = NFA(node, builder.budget, dfa_of, builder.lexeme_template, known=builder._known())
    assert calls == [] and got.region_tuples[0][5] is builder.eager(small)


@pytest.mark.parametrize("known", [(), ([{}], 65, {}), (({},), 65, []), ((1,), 65, {}), (({},), "65", {}), 3])
def test_a_malformed_known_is_refused(known: object) -> None:
    builder = AutomatonBuilder()
    with pytest.raises(TypeError, match="known"):
        NFA(lit("x"), builder.budget, builder.embedded, builder.lexeme_template, known=known)  # type: ignore[arg-type]
