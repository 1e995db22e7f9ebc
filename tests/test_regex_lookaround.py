"""Lookarounds in `pattern` / `patternProperties` (``^(?!@@)[a-z]+$``): lookaheads and lookbehinds
become intersections and complements.  Property test: for random patterns with lookarounds over a
small alphabet, the compiled language equals Python's `re.search` on random strings.  What stays
refused says exactly why."""
import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.errors import UnsupportedRegexError  # noqa: E402
from formwork.grammar.regex_parser import regex  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED, accepts  # noqa: E402
from formwork.schemas.keywords import DRAFT_2020_12, KeywordKind, classify, regex_problem  # noqa: E402

CHARS = ["a", "b", ".", "[ab]", "[^a]"]
REFUSALS = ["a lookahead before a lookbehind in one sequence is not supported",
            "a lookaround inside an unbounded repetition (*, +, {n,}) is not supported"]


def fixed_width() -> st.SearchStrategy[str]:
    """Lookbehind bodies Python accepts: a fixed width."""
    return st.lists(st.sampled_from(CHARS), min_size=1, max_size=3).map("".join)


def patterns(depth: int = 2) -> st.SearchStrategy[str]:
    plain = st.recursive(
        st.sampled_from(CHARS),
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=2).map(lambda xs: "(?:" + "|".join(xs) + ")"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{1,2}"])).map(lambda t: f"(?:{t[0]}){t[1]}")),
        max_leaves=4)
    look = st.one_of(
        st.tuples(st.sampled_from(["(?=", "(?!"]), plain).map(lambda t: f"{t[0]}{t[1]})"),
        st.tuples(st.sampled_from(["(?<=", "(?<!"]), fixed_width()).map(lambda t: f"{t[0]}{t[1]})"))
    item = st.one_of(plain, look, look.map(lambda x: f"(?:{x}b|a)"), look.map(lambda x: f"(?:{x}a){{0,2}}"),
                     look.map(lambda x: f"(?:{x}[ab])*" if x.startswith("(?=") or x.startswith("(?!")
                              else f"(?:[ab]{x})+"))
    body = st.lists(item, min_size=1, max_size=4).map("".join)
    return st.tuples(st.booleans(), body, st.booleans()).map(
        lambda t: ("^" if t[0] else "") + t[1] + ("$" if t[2] else ""))


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), texts=st.lists(st.text(alphabet="abc", max_size=7), min_size=25, max_size=25))
def test_the_language_equals_re_search(pattern, texts):
    try:
        node = regex(pattern, search=True)
    except UnsupportedRegexError as exc:
        assert any(reason in str(exc) for reason in REFUSALS), (pattern, str(exc))
        assume(False)
    dfa = SHARED.compile(node)
    for text in texts + ["", "a", "b", "ab", "ba", "aab", "abb"]:
        assert accepts(dfa, text.encode()) == (re.search(pattern, text) is not None), (pattern, text)


@pytest.mark.parametrize("pattern, good, bad", [
    ("^(?!@@)[a-z@]+$", ["abc", "@a", "a@@"], ["@@", "@@a", ""]),
    ("^(?=.*[A-Z])(?=.*[0-9]).{8,}$", ["abcdEF12", "1aaaaaaA"], ["abcdefgh", "ABCDEFG1x"[:7], "abcdefg1"]),
    ("^(?!.*--)[a-z-]+$", ["a-b-c"], ["a--b", "--"]),
    ("^[a-z-]+(?<!-)$", ["a-b", "a"], ["a-", "-"]),
    ("(?<=@)example\\.com$", ["me@example.com"], ["example.com", "me@example.org"]),
    ("^(?!-)[a-z-]*(?<![.])$", ["ab-c", ""], ["-ab"]),
    ("^(?:(?!ab)[ab]){0,3}$", ["bba", "aaa", ""], ["aab", "abbb"]),
    ("^(?:(?!ab).)*$", ["", "ba", "éa", "a b"], ["ab", "xaby", "éab"]),
    ("^(?:(?!--)[a-z-])+$", ["a-b", "-"], ["a--b", "", "A"]),
    ("^(?:[a-z](?<!ab))+$", ["a", "ba", "bb"], ["ab", "cab"]),
])
def test_lookaround_examples(pattern, good, bad):
    dfa = SHARED.compile(regex(pattern, search=True))
    for text in good:
        assert re.search(pattern, text) and accepts(dfa, text.encode()), text
    for text in bad:
        assert not re.search(pattern, text) and not accepts(dfa, text.encode()), text


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(look=st.sampled_from(["(?=", "(?!"]), body=st.lists(st.sampled_from(CHARS), min_size=1, max_size=3),
       char=st.sampled_from(CHARS), plus=st.booleans(), texts=st.lists(st.text(alphabet="abc", max_size=7),
                                                                     min_size=25, max_size=25))
def test_tempered_repetitions_equal_re_search(look, body, char, plus, texts):
    pattern = f"^(?:{look}{''.join(body)}){char}){'+' if plus else '*'}$"
    dfa = SHARED.compile(regex(pattern, search=True))
    for text in texts:
        assert accepts(dfa, text.encode()) == (re.search(pattern, text) is not None), (pattern, text)


def test_lookarounds_compile_in_pattern_and_pattern_properties():
    assert classify("pattern", "^(?!@@)[a-z]+$", DRAFT_2020_12, {}).kind is KeywordKind.SUPPORTED
    schema = {"type": "object", "patternProperties": {"^(?!x-)[a-z-]+$": {"type": "integer"}},
              "additionalProperties": False,
              "properties": {"Name": {"type": "string", "pattern": "^(?!@@)[a-z@]+$"}}}
    grammar = compile_json_schema(schema, byte_vocab())
    for doc, valid in [({"Name": "a@b"}, True), ({"Name": "@@b"}, False), ({"ab": 1}, True),
                       ({"x-ab": 1}, False)]:
        m = grammar.matcher()
        assert (m.accept_string(json.dumps(doc, separators=(",", ":"))) and m.can_terminate()) == valid


@pytest.mark.parametrize("pattern, reason", [
    ("^(?:(?!ab).)*b$", "a lookaround inside an unbounded repetition (*, +, {n,}) is not supported"),
    ("^(?:(?!a)bc)*$", "a lookaround inside an unbounded repetition (*, +, {n,}) is not supported"),
    ("^x(?:[a-z](?<!ab))+$", "a lookaround inside an unbounded repetition (*, +, {n,}) is not supported"),
    ("^(?:(?=a).){0,9}$", "a lookaround inside a repetition of more than 8 copies is not supported"),
    ("(?=a).(?<=a)", "a lookahead before a lookbehind in one sequence is not supported"),
])
def test_what_stays_refused_says_why(pattern, reason):
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"properties": {"p": {"type": "string", "pattern": pattern}}})
    assert err.value.keyword == "pattern" and err.value.pointer == "/properties/p/pattern"
    assert err.value.reason.startswith(reason), err.value.reason


@pytest.mark.parametrize("pattern", ["(a)\\1", "(?P<n>a)(?P=n)", "(?<n>a)\\k<n>"])
def test_backreferences_stay_refused_with_the_exact_reason(pattern):
    assert regex_problem(pattern) == ("backreferences are not regular; the pattern cannot be "
                                      "compiled to an automaton (lookarounds can)")
    verdict = classify("pattern", pattern, DRAFT_2020_12, {})
    assert verdict.kind is KeywordKind.UNSUPPORTED
    assert verdict.reason == f"pattern {pattern!r}: " + regex_problem(pattern)
