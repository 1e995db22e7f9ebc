"""The Earley closure's item budget: a set that grows past `max_items` is a typed error."""
from __future__ import annotations

import pytest

from formwork.grammar.cfg.earley import EarleyParser
from formwork.grammar.cfg.productions import lower_grammar
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import Grammar, RuleRef, alt, lit, seq

# s -> s s | "a": after n a's the set completes s at every origin, n items and more
AMBIGUOUS = Grammar({"s": alt(seq(RuleRef("s"), RuleRef("s")), lit("a"))}, "s")


def _scan_a(parser: EarleyParser, count: int) -> int:
    state = parser.start
    for _ in range(count):
        state = parser.scan(state, next(iter(parser.expected(state))))
    return state


def test_sets_within_the_budget_are_built():
    parser = EarleyParser(lower_grammar(AMBIGUOUS), set())
    assert parser.sets[_scan_a(parser, 30)].accepting


def test_a_set_past_the_budget_is_an_error():
    parser = EarleyParser(lower_grammar(AMBIGUOUS), set(), max_items=20)
    with pytest.raises(GrammarBudgetError, match="max_items"):
        _scan_a(parser, 30)
