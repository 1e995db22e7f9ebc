"""`$` and `^` away from the ends of a top-level branch (issue 21): inside a lookahead ``(?=X$)``
is an intersection with X itself (no ``.*`` after it), ``(?!X$)`` its complement, and a `$` in the
middle of a branch (``a$b``) matches nothing, as in ECMA-262 without the `m` flag.  The oracle is
Python's `re.search` with `$` spelled ``\\Z`` (Python's `$` also matches before a final newline,
ECMAScript's does not); the texts include newlines so that difference is exercised."""
import itertools
import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.errors import EmptyLanguageError, UnsupportedRegexError  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED, accepts  # noqa: E402
from formwork.grammar.regex_parser import regex  # noqa: E402

CHARS = ["a", "b", ".", "[ab]", "[^a]"]
ALPHABET = "ab\n"
EXTRA_TEXTS = ["", "a", "b", "ab", "ba", "a\n", "\n", "aab", "abb", "b\n"]
REFUSALS = ["a lookahead before a lookbehind in one sequence is not supported",
            "a lookaround inside an unbounded repetition (*, +, {n,}) is not supported",
            "'^' inside a lookahead, or after one in a sequence, is not supported",
            "'$' inside a lookbehind, or before one in a sequence, is not supported"]
CSPELL = Path(__file__).parent.parent / "benchmarks/corpora/github-npm/cspell__cspell-types/cspell.schema.json"


def python_pattern(pattern: str) -> str:
    """`pattern` (no escapes, no literal `$`) with ECMAScript's end of input for `$`."""
    return pattern.replace("$", r"\Z")


def plain(end: bool) -> st.SearchStrategy[str]:
    """Small lookaround-free patterns; with `end`, some branches hold a `$` (not only last)."""
    leaves = st.sampled_from(CHARS + (["$"] if end else []))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=2).map(lambda xs: "(?:" + "|".join(xs) + ")"),
            st.tuples(inner, st.sampled_from(["*", "+", "?", "{1,2}"]))
            .filter(lambda t: not t[0].endswith("$")).map(lambda t: f"(?:{t[0]}){t[1]}")),
        max_leaves=4)


def lookaheads() -> st.SearchStrategy[str]:
    """``(?=X$)``, ``(?!X$)``, ``(?=X$|Y)``, unanchored ones, and one nested in another."""
    kind = st.sampled_from(["(?=", "(?!"])
    anchored = st.tuples(kind, plain(end=False)).map(lambda t: f"{t[0]}{t[1]}$)")
    loose = st.tuples(kind, plain(end=True)).map(lambda t: f"{t[0]}{t[1]})")
    either = st.tuples(kind, plain(end=False), plain(end=False)).map(lambda t: f"{t[0]}{t[1]}$|{t[2]})")
    simple = st.one_of(anchored, loose, either)
    nested = st.tuples(kind, plain(end=False), simple).map(lambda t: f"{t[0]}{t[1]}{t[2]})")
    return st.one_of(simple, nested)


def patterns() -> st.SearchStrategy[str]:
    look = lookaheads()
    item = st.one_of(plain(end=True), look, look.map(lambda x: f"(?:{x}b|a)"),
                     look.map(lambda x: f"(?:{x}a){{0,2}}"), look.map(lambda x: f"(?:{x}[ab\n])*"),
                     st.just("(?:^a|b)"), st.just("(?:a|$)"))
    body = st.lists(item, min_size=1, max_size=4).map("".join)
    return st.tuples(st.booleans(), body, st.booleans()).map(
        lambda t: ("^" if t[0] else "") + t[1] + ("$" if t[2] else ""))


def _language(pattern: str):
    try:
        return SHARED.compile(regex(pattern, search=True))
    except UnsupportedRegexError as exc:
        assert any(reason in str(exc) for reason in REFUSALS), (pattern, str(exc))
        assume(False)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), texts=st.lists(st.text(alphabet=ALPHABET, max_size=7), min_size=25, max_size=25))
def test_anchored_lookaheads_equal_re_search(pattern, texts):
    dfa = _language(pattern)
    oracle = re.compile(python_pattern(pattern))
    for text in texts + EXTRA_TEXTS:
        assert accepts(dfa, text.encode()) == (oracle.search(text) is not None), (pattern, text)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=patterns(), texts=st.lists(st.text(alphabet=ALPHABET, max_size=5), min_size=8, max_size=8))
def test_a_string_schema_with_the_pattern_accepts_exactly_the_matches(pattern, texts):
    try:
        grammar = compile_json_schema({"type": "string", "pattern": pattern}, byte_vocab())
    except UnsupportedSchemaError as exc:
        assert any(reason in exc.reason for reason in REFUSALS), (pattern, exc.reason)
        assume(False)
    except EmptyLanguageError:  # a pattern no string matches (``(?=a$)$``)
        grammar = None
    oracle = re.compile(python_pattern(pattern))
    for text in texts + EXTRA_TEXTS:
        if grammar is None:
            assert oracle.search(text) is None, (pattern, text)
            continue
        m = grammar.matcher()
        accepted = m.accept_string(json.dumps(text)) and m.can_terminate()
        assert accepted == (oracle.search(text) is not None), (pattern, text)


@pytest.mark.parametrize("pattern, good, bad", [
    ("^(?=[a-z]+$).{2}", ["ab", "abc"], ["a", "a1", "ab\n", "a\nb"]),
    ("^(?![a-z]+$).+$", ["a1", "1", "a b"], ["ab", "", "ab\n"]),
    ("a$b", [], ["ab", "a", "b", "a\nb"]),
    ("(?:a$|b)c", ["bc", "abc"], ["ac", "a"]),
    ("x(?=a(?!b$))", ["xa", "xab\n", "xabc"], ["xab", "x"]),
    ("(?:^a|b)c", ["ac", "bc", "xbc"], ["xac", "c"]),
    ("a^b", [], ["ab", "a\nb"]),
])
def test_end_assertion_examples(pattern, good, bad):
    dfa = SHARED.compile(regex(pattern, search=True))
    oracle = re.compile(python_pattern(pattern))
    for text in good:
        assert oracle.search(text) and accepts(dfa, text.encode()), text
    for text in bad:
        assert not oracle.search(text) and not accepts(dfa, text.encode()), text


@pytest.mark.parametrize("pattern", ["^(?:(?!a$).)*$", "^(?:(?=[ab]*$)[ab\n])+$", "^(?:(?!b$|ab)[ab])*$",
                                     "(?=(?!a$)b*$)", "^(?:a|$)b?"])
def test_every_short_text_agrees(pattern):
    """Tempered repetitions and nested lookaheads with `$`, on every text of up to 5 of a, b, newline."""
    dfa = SHARED.compile(regex(pattern, search=True))
    oracle = re.compile(python_pattern(pattern))
    for n in range(6):
        for text in map("".join, itertools.product(ALPHABET, repeat=n)):
            assert accepts(dfa, text.encode()) == (oracle.search(text) is not None), text


def test_cspell_dictionary_id_pattern():
    """cspell's /definitions/DictionaryId: no forbidden character anywhere (lookahead to `$`), a
    word character somewhere; ``"abc\\n"`` is refused (ECMAScript's `$` is the very end)."""
    schema = json.loads(CSPELL.read_text())
    pattern = schema["definitions"]["DictionaryId"]["pattern"]
    dfa = SHARED.compile(regex(pattern, search=True))
    oracle = re.compile(python_pattern(pattern))
    for text, valid in [("typescript", True), ("my dict 2", True), ("a!b", False), ("x*", False),
                        ("  ", False), ("", False), ("abc\n", False), ("é_", True), ("[a]", False)]:
        assert accepts(dfa, text.encode()) == valid == (oracle.search(text) is not None), text


def test_the_cspell_schema_compiles_and_checks_dictionary_names():
    schema = json.loads(CSPELL.read_text())
    grammar = compile_json_schema(schema, byte_vocab())
    validator = jsonschema.Draft7Validator(schema)
    for names, valid in [(["typescript", "!python"], True), (["a,b"], False), (["!!"], False),
                         (["!!node"], True), (["~x"], False)]:
        doc = {"dictionaries": names}
        m = grammar.matcher()
        assert (m.accept_string(json.dumps(doc)) and m.can_terminate()) == valid, names
        assert validator.is_valid(doc) == valid, names


@pytest.mark.parametrize("pattern, reason", [
    ("(?=^a)b", "'^' inside a lookahead, or after one in a sequence, is not supported"),
    ("(?<=a$)", "'$' inside a lookbehind, or before one in a sequence, is not supported"),
])
def test_anchors_left_out_say_why(pattern, reason):
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"properties": {"p": {"type": "string", "pattern": pattern}}})
    assert err.value.pointer == "/properties/p/pattern"
    assert reason in err.value.reason, err.value.reason
