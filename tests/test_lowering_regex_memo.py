"""The regex parser's memo of groups and classes (by text) gives the IR a fresh parse gives."""
from __future__ import annotations

import pytest

import formwork.grammar.regex_parser as rp
from formwork.grammar.errors import GrammarError
from formwork.grammar.regex_parser import parse_regex

PATTERNS = [
    "(a)", "(?:a|b)c(a)", "[(](a)", "\\((a)\\)", "[]()]x(b)", "(a{1,)}", "([)])", "(?P<n>a)(?:a)",
    "[^]a](a)", "[a-c](?:[a-c]|[^a-c])", "(?:1[0-9]|[2-8][0-9]|9[0-9])|(?:1[0-9]|[2-8][0-9])",
    "(x\\))(x\\))", "[\\]](a)[\\]]", "(?:(a)|(a))+", "(?:a)?(?:a){2,3}", "(\\u{41})(\\u{41})",
    "[a\\-z](?:[a\\-z])", "(a)(?:a)(?<n>a)",
]


def _fresh(pattern: str, search: bool):
    rp._GROUPS.clear()
    rp._CLASSES.clear()
    return parse_regex(pattern, search=search)


@pytest.mark.parametrize("search", [False, True])
def test_memoised_parses_equal_fresh_ones(search):
    fresh = [_fresh(p, search) for p in PATTERNS]
    for p in PATTERNS + PATTERNS[::-1]:  # every group and class of the others is remembered
        parse_regex(p, search=search)
    assert [parse_regex(p, search=search) for p in PATTERNS] == fresh
    assert rp._GROUPS and rp._CLASSES


def test_a_remembered_group_is_not_reused_across_a_different_text():
    parse_regex("(ab)")
    assert parse_regex("(ab)+") != parse_regex("(ab+)")
    assert parse_regex("(a\\)b)") == parse_regex("a\\)b")
    assert parse_regex("[ab]") != parse_regex("[ab\\]]")


def test_errors_are_not_remembered():
    for _ in range(2):
        with pytest.raises(GrammarError):
            parse_regex("(a\\1)")
        with pytest.raises(GrammarError):
            parse_regex("[a")
    assert "(a\\1)" not in rp._GROUPS
