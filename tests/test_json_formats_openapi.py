"""`format` values added by issue 21: OpenAPI's number formats (int32, int64, uint32, uint64 as
integer ranges, float and double as any number), `byte` (padded base64), `regex` (a sound regular
subset), `json-pointer` and `relative-json-pointer`; and every format jsonschema's FORMAT_CHECKER
asserts agrees with it: a string the grammar accepts passes jsonschema's check (hypothesis, on
strings generated from the format's own regex and on mutations of them)."""
import base64
import binascii
import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.json_schema import compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema import formats  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED, accepts  # noqa: E402
from formwork.grammar.json_schema.regex_format import regex_format  # noqa: E402
from formwork.schemas.keywords import SUPPORTED_FORMATS  # noqa: E402

CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
_DFAS: dict = {}


def dfa(schema):
    key = json.dumps(schema, sort_keys=True)
    if key not in _DFAS:
        _DFAS[key] = SHARED.compile(lower_json_schema(schema, max_nesting_depth=1).node)
    return _DFAS[key]


def ok(schema, value) -> bool:
    """Whether the grammar accepts the JSON text of `value`."""
    return num(schema, json.dumps(value, ensure_ascii=False))


def num(schema, text: str) -> bool:
    """Whether the grammar accepts `text` as it is (a number's spelling)."""
    return accepts(dfa(schema), text.encode("utf-8"))


def test_the_schema_front_end_and_the_compiler_know_the_same_formats():
    assert SUPPORTED_FORMATS == formats.SUPPORTED | formats.NUMBER_FORMATS


# ------------------------------------------------------------------------ number formats
@pytest.mark.parametrize("fmt, lo, hi", [("int32", -2 ** 31, 2 ** 31 - 1), ("int64", -2 ** 63, 2 ** 63 - 1),
                                         ("uint32", 0, 2 ** 32 - 1), ("uint64", 0, 2 ** 64 - 1)])
@pytest.mark.parametrize("typ", ["integer", "number", None])
def test_integer_formats_are_ranges_of_integers(fmt, lo, hi, typ):
    schema = {"format": fmt} | ({"type": typ} if typ else {})
    for good in (str(lo), str(hi), "0", "7"):
        assert num(schema, good), good
    for bad in (str(lo - 1), str(hi + 1), "1.5", "0.5", "1e3"):
        assert not num(schema, bad), bad
    if typ is None:  # a format constrains only the instances it applies to
        assert ok(schema, "text") and ok(schema, None) and ok(schema, [1.5])


def test_integer_formats_meet_the_other_bounds():
    schema = {"type": "integer", "format": "uint32", "minimum": -5, "maximum": 10}
    assert [v for v in range(-7, 13) if num(schema, str(v))] == list(range(0, 11))


@settings(max_examples=200, deadline=None)
@given(st.integers(-2 ** 65, 2 ** 65) | st.decimals(-2 ** 40, 2 ** 40, allow_nan=False,
                                                    allow_infinity=False, places=3))
def test_int32_accepts_exactly_the_integers_of_its_range(x):
    text = str(x)
    integral = "." not in text or text.rstrip("0").endswith(".")
    inside = integral and -2 ** 31 <= int(float(text) if "." in text else int(text)) <= 2 ** 31 - 1
    canonical = text == str(int(x)) if integral else True
    assert num({"type": "number", "format": "int32"}, text) == (inside and canonical)


@pytest.mark.parametrize("fmt", ["float", "double"])
def test_float_and_double_are_any_number(fmt):
    for good in ("0", "-1.5", "1e300", "3.25E-7"):
        assert num({"format": fmt}, good)
    assert ok({"format": fmt}, "x") and not ok({"type": "number", "format": fmt}, "x")


# ------------------------------------------------------------------------ string formats
def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except binascii.Error:
        return False
    return len(text) % 4 == 0 and not text.endswith("===")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="AQZaz09+/=-_ ", max_size=14) | st.binary(max_size=12).map(
    lambda b: base64.b64encode(b).decode()))
def test_byte_is_padded_base64(text):
    assert ok({"type": "string", "format": "byte"}, text) == (
        _is_base64(text) and "=" not in text.rstrip("="))
    if ok({"type": "string", "format": "byte"}, text):
        base64.b64decode(text, validate=True)


def test_byte_examples():
    good, bad = ["", "YQ==", "YWI=", "YWJj", "+/+/"], ["YQ", "YQ=", "Y===", "YQ==YQ==", "YW\nJj", "YW_j"]
    for g in good:
        assert ok({"type": "string", "format": "byte"}, g), g
    for b in bad:
        assert not ok({"type": "string", "format": "byte"}, b), b


def test_json_pointers():
    pointer, relative = {"format": "json-pointer"}, {"format": "relative-json-pointer"}
    for good in ("", "/", "/a~0b~1c", "/foo//bar", "/é"):
        assert ok(pointer, good), good
    for bad in ("a", "/~2", "/~", "#/a"):
        assert not ok(pointer, bad), bad
    for good in ("0", "1#", "12/a/b", "0//"):
        assert ok(relative, good), good
    for bad in ("", "01", "-1/a", "1##", "/a", "0/~"):
        assert not ok(relative, bad), bad


def test_regex_examples():
    good = ["([abc])+\\s+$", "^[a-z0-9_\\-]+$", "(?:a|b)*?", "a{2,10}", "\\d{4}-\\d{2}", "", "a|"]
    bad = ["^(abc]", "[^]", "[]", "a{3,2}", "[z-a]", "a**", "(", "\\p{L}", "(((((a)))))", "a{,3}"]
    for g in good:
        assert ok({"format": "regex"}, g), g
    for b in bad:
        assert not ok({"format": "regex"}, b), b


# ------------------------------------------------- agreement with jsonschema's FORMAT_CHECKER
#: The formats both formwork and this jsonschema installation assert, with generators of strings
#: from formwork's own regex for them; the IRI and URI Template checkers deviate from their RFCs
#: and are compared with corrected oracles in test_json_formats_uri.py.
ASSERTED = sorted(set(CHECKER.checkers) & SUPPORTED_FORMATS
                  - {"iri", "iri-reference", "uri-template"})


def _generator(name: str):
    if name == "regex":  # groups one deep (the full language is slow to draw from) or noise
        return st.from_regex(re.compile(regex_format(1)), fullmatch=True) | st.text(
            alphabet="()[]{}^$.*+?|\\-az09,:dp", max_size=12)
    domain = st.from_regex(re.compile(f"{formats._label(15)}(?:\\.{formats._label(15)}){{0,2}}"),
                           fullmatch=True)
    if name in ("email", "idn-email"):
        extra = formats._NON_ASCII if name == "idn-email" else ""
        local = st.from_regex(re.compile(formats._local_part(extra)), fullmatch=True)
        return st.builds(lambda a, b: f"{a}@{b}", local, domain)
    if name == "idn-hostname":
        return domain
    return st.from_regex(re.compile(formats.FORMAT_REGEXES[name]), fullmatch=True)


def _mutations(text: str, data) -> str:
    if not text:
        return data.draw(st.text(max_size=3))
    i = data.draw(st.integers(0, len(text)))
    how = data.draw(st.sampled_from(["delete", "insert", "replace"]))
    char = data.draw(st.sampled_from(list(":-.@[]()\\{}0aZ9 /%é")))
    if how == "delete":
        return text[:i] + text[i + 1:]
    return text[:i] + char + text[i + (how == "replace"):]


def test_the_agreement_covers_the_formats_jsonschema_asserts():
    assert {"date", "email", "ipv4", "ipv6", "regex", "uuid"} <= set(ASSERTED)


@pytest.mark.parametrize("name", ASSERTED)
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_strings_the_grammar_accepts_pass_jsonschemas_format_check(name, data):
    text = data.draw(_generator(name))
    for candidate in (text, _mutations(text, data)):
        if ok({"type": "string", "format": name}, candidate):
            assert CHECKER.conforms(candidate, name), (name, candidate)
    if name != "regex":  # formwork's regex language is a subset of what re.compile accepts
        # generated domains may hold an A-label-like 'ab--c', which (idn-)hostname rejects
        assert ok({"type": "string", "format": name}, text) or "--" in text, (name, text)


def test_compiled_schemas_with_the_new_formats_match_tokens():
    g = compile_json_schema({"type": "object", "properties": {
        "id": {"type": "integer", "format": "int64"}, "data": {"type": "string", "format": "byte"}},
        "required": ["id", "data"], "additionalProperties": False}, byte_vocab())
    m = g.matcher()
    assert m.accept_string('{"id": 9223372036854775807, "data": "YWI="}') and m.can_terminate()
    m = g.matcher()
    assert not m.accept_string('{"id": 9223372036854775808')
