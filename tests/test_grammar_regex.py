"""Regex parser and byte automata: languages checked against Python's `re` and brute force."""
from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar import (
    CompileBudget, GrammarBudgetError, RecursionNotSupportedError, RegexSyntaxError,
    UndefinedRuleError, UnsupportedRegexError,
)
from formwork.grammar.automaton import compile_dfa
from formwork.grammar.ir import (EMPTY, NOTHING, And, Bytes, ByteRange, Grammar, Not, Repeat, RuleRef, alt,
                                 lit, repeat, seq)
from formwork.grammar.ir_chars import any_char, chars
from formwork.grammar.regex_parser import regex

# (pattern, alphabet for random strings); \d and \w are compared under re.ASCII (our semantics).
PATTERNS = [
    (r"abc", "abcx"),
    (r"a|b|cd", "abcd"),
    (r"(ab)*c?", "abc"),
    (r"a+b*?c{2}", "abc"),
    (r"a{2,4}", "ab"),
    (r"a{2,}b", "ab"),
    (r"(?:x|yz){1,3}", "xyz"),
    (r"(?P<word>[a-c]+)-(?<n>\d{1,3})", "abc-0129"),
    (r"[^abc]+", "abcdé日\n"),
    (r"[a-c\d_-]+", "abc09_-x"),
    (r"\w+@\w+\.(com|org)", "ab1_@.comorgx"),
    (r"\d{3}-\d{4}", "0123456789-"),
    (r"\D\W", "a1 _-"),
    (r".{2,3}", "ab\n日"),
    (r"[α-ω]+|日本", "αβω日本a"),
    (r"\u00e9\x41\t", "éA\tx"),
    (r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", "0123.e-+E9"),
    (r"\{\}|\[\]|\(\)|\.\*\+\?", "{}[]().*+?"),
    (r"a{,x}", "a{,x}"),
    (r"[]a]+", "]ab"),
    (r"()a", "ab"),
    (r"(a|)+b", "ab"),
]


@pytest.mark.parametrize("pattern,alphabet", PATTERNS)
def test_regex_matches_python_re(pattern: str, alphabet: str) -> None:
    dfa = compile_dfa(regex(pattern))
    expected = re.compile(pattern.replace("(?<n>", "(?P<n>"), re.ASCII)

    @settings(deadline=None, max_examples=80, database=None)
    @given(st.text(alphabet=alphabet, max_size=10))
    def check(text: str) -> None:
        assert dfa.accepts(text.encode()) == bool(expected.fullmatch(text)), text

    check()
    # exhaustive for very short strings too
    for n in range(4):
        for combo in itertools.product(alphabet, repeat=n):
            text = "".join(combo)
            assert dfa.accepts(text.encode()) == bool(expected.fullmatch(text)), text


SEARCH_PATTERNS = [r"ab", r"^ab", r"ab$", r"^ab$", r"^a|b$", r"a.c", r"^$"]


@pytest.mark.parametrize("pattern", SEARCH_PATTERNS)
def test_search_semantics(pattern: str) -> None:
    dfa = compile_dfa(regex(pattern, search=True))
    # ECMAScript `$` is the end of input, which is Python's \Z (Python's `$` also matches before "\n")
    expected = re.compile(pattern.replace("$", r"\Z"))
    for n in range(5):
        for combo in itertools.product("abc\n", repeat=n):
            text = "".join(combo)
            assert dfa.accepts(text.encode()) == (expected.search(text) is not None), (pattern, text)


def test_anchors_in_full_match_mode_are_no_ops() -> None:
    assert compile_dfa(regex(r"^a+$")).accepts(b"aaa")
    assert not compile_dfa(regex(r"^a+$")).accepts(b"aaa\n")


def test_ecma_whitespace_class() -> None:
    dfa = compile_dfa(regex(r"\s"))
    for ch in "\t\n\v\f\r \u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff":
        assert dfa.accepts(ch.encode()), hex(ord(ch))
    for ch in "a\x1c\x85\u200b_":
        assert not dfa.accepts(ch.encode()), hex(ord(ch))
    not_space = compile_dfa(regex(r"\S"))
    assert not_space.accepts("日".encode()) and not not_space.accepts(b" ")


def test_digit_and_word_are_ascii() -> None:
    assert not compile_dfa(regex(r"\d")).accepts("٣".encode())
    assert not compile_dfa(regex(r"\w")).accepts("é".encode())
    assert compile_dfa(regex(r"\W")).accepts("é".encode())


@pytest.mark.parametrize("pattern", [
    r"(a)\1", r"(?P<x>a)(?P=x)", r"\k<x>", r"\bword",
    r"a\B", r"(?i)abc", r"a++", r"\p{Script=Greek}", r"(?=^a)b", r"(?<=a$)", r"[[:alpha:]]", r"a{,2}",
])
def test_unsupported_features_raise(pattern: str) -> None:
    with pytest.raises(UnsupportedRegexError) as info:
        regex(pattern)
    assert repr(pattern)[1:-1] in str(info.value) or pattern in str(info.value)


@pytest.mark.parametrize("pattern", [r"(a", r"a)", r"*a", r"a{3,2}", r"[a", r"[z-a]", "a\\", r"\xZZ", r"\q"])
def test_syntax_errors_raise(pattern: str) -> None:
    with pytest.raises(RegexSyntaxError):
        regex(pattern)


def test_utf8_multibyte_classes_and_invalid_bytes() -> None:
    any_one = compile_dfa(any_char())
    for cp in [0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]:
        assert any_one.accepts(chr(cp).encode()), hex(cp)
    for bad in [b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe6\x97", b"\x80"]:
        assert not any_one.accepts(bad), bad
    greek = compile_dfa(chars([("α", "ω")], negate=True))
    assert greek.accepts("a".encode()) and greek.accepts("🎉".encode())
    assert not greek.accepts("β".encode())


@settings(deadline=None, max_examples=60, database=None)
@given(st.lists(st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 300)), min_size=1, max_size=4),
       st.booleans(), st.lists(st.integers(0, 0x10FFFF), min_size=1, max_size=30))
def test_chars_matches_code_point_membership(spans, negate, probes) -> None:
    ranges = [(lo, min(lo + width, 0x10FFFF)) for lo, width in spans]
    dfa = compile_dfa(chars(ranges, negate=negate))
    for cp in probes + [lo for lo, _ in ranges] + [hi for _, hi in ranges]:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        inside = any(lo <= cp <= hi for lo, hi in ranges)
        assert dfa.accepts(chr(cp).encode()) == (inside != negate), hex(cp)


def test_and_not_against_brute_force() -> None:
    node = And(regex(r"[abc]{0,5}"), Not(regex(r".*ab.*")))
    dfa = compile_dfa(node)
    for n in range(7):
        for combo in itertools.product("abc", repeat=n):
            text = "".join(combo)
            assert dfa.accepts(text.encode()) == (n <= 5 and "ab" not in text), text
    assert compile_dfa(Not(lit("x"))).accepts("日本".encode())
    assert not compile_dfa(Not(lit("x"))).accepts(b"\xff")


def test_ir_helpers_normalise() -> None:
    assert seq(lit("ab"), EMPTY, lit("c")) == Bytes(b"abc")
    assert seq(lit("a"), NOTHING) == NOTHING
    assert alt(lit("a"), NOTHING, lit("a")) == lit("a")
    assert alt() == NOTHING and seq() == EMPTY
    assert repeat(lit("a"), 1, 1) == lit("a") and repeat(NOTHING, 0, 3) == EMPTY
    assert isinstance(repeat(lit("a"), 0, None), Repeat)
    assert ByteRange(3, 9).ranges == ((3, 9),)
    assert hash(regex("a|b")) == hash(regex("a|b"))


def test_rule_refs_inline_and_cycles_are_rejected() -> None:
    g = Grammar({"start": seq(RuleRef("num"), lit(","), RuleRef("num")), "num": regex(r"\d+")}, "start")
    dfa = compile_dfa(g)
    assert dfa.accepts(b"12,3") and not dfa.accepts(b"12,")
    cyclic = Grammar({"start": seq(lit("("), RuleRef("inner"), lit(")")),
                      "inner": alt(EMPTY, RuleRef("start"))}, "start")
    with pytest.raises(RecursionNotSupportedError, match="start -> inner -> start"):
        compile_dfa(cyclic)
    with pytest.raises(UndefinedRuleError):
        compile_dfa(Grammar({"start": RuleRef("missing")}, "start"))


def test_budgets_raise_clear_errors() -> None:
    lazy = compile_dfa(regex(r"[a-z]{0,300}"), CompileBudget(max_dfa_states=50))
    assert lazy.accepts(b"abc")  # states are built on demand...
    with pytest.raises(GrammarBudgetError, match="max_dfa_states"):
        lazy.table  # noqa: B018 - ...and the state budget holds when they all are
    with pytest.raises(GrammarBudgetError, match="max_nfa_states"):
        compile_dfa(regex(r"(abc){5000}"), CompileBudget(max_nfa_states=1000))
    with pytest.raises(GrammarBudgetError, match="time budget"):
        compile_dfa(regex(r".{0,2000}"), CompileBudget(max_seconds=0.0))


LAZY_PATTERN = r'\{"id": [0-9]{1,6}, "tags": \[("[a-c]{0,3}"(, "[a-c]{0,3}")*)?\]\}'


def test_lazy_automaton_agrees_with_its_minimal_materialisation() -> None:
    import gc

    from formwork.grammar.automaton import AutomatonBuilder

    node = regex(LAZY_PATTERN)
    assert gc.isenabled()
    lazy = compile_dfa(node)
    assert gc.isenabled()  # the collector is paused only while building
    assert lazy.num_states < 10  # nothing beyond the start state is built at compile time
    eager = AutomatonBuilder().eager(node)
    texts = ['{"id": 12, "tags": []}', '{"id": 1, "tags": ["a", "bc", ""]}', '{"id": 1234567, "tags": []}',
             '{"id": 3, "tags": ["abcd"]}', '{"id": 3, "tags": ["a",]}', '{"id": ', ""]
    for text in texts:
        assert lazy.accepts(text.encode()) == eager.accepts(text.encode()) == bool(re.fullmatch(LAZY_PATTERN, text))
    assert len(lazy.table) >= eager.num_states  # lazy states are not minimised


def test_empty_sub_languages_leave_no_live_dead_ends() -> None:
    from formwork.grammar.dfa import DEAD
    from formwork.grammar.ir import Alt, ByteSet, Seq

    never = ByteSet(())  # built raw, bypassing the helpers' normalisation
    node = Alt((Seq((lit("ab"), never)), lit("ac"), Seq(()), Bytes(b""), Repeat(never, 0, 3),
                Seq((lit("x"), Repeat(never, 1, None)))))
    dfa = compile_dfa(node)
    assert dfa.accepts(b"ac") and dfa.accepts(b"")
    # "ab" and "x" lead only into empty branches, so they must be dead, not live dead ends
    assert dfa.walk(1, b"ab") == DEAD and dfa.walk(1, b"x") == DEAD
    assert set(np.flatnonzero(dfa.row(dfa.walk(1, b"a"))).tolist()) == {ord("c")}
    assert compile_dfa(Seq((lit("a"), never))).is_empty()


def test_lazy_dfa_accepts_a_string_that_grows_its_state_arrays():
    # A fresh lazy DFA knows only a few states; a long walk creates many more, which replaces the
    # arrays that hold the accepting flags. accepts() must read the flags after the walk.
    from formwork.grammar.automaton import compile_dfa
    from formwork.grammar.regex_parser import regex

    dfa = compile_dfa(regex("a{300}"))
    assert dfa.accepts(b"a" * 300)
    assert not compile_dfa(regex("a{300}")).accepts(b"a" * 299)
