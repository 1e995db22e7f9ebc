"""JSON Schema lowering: number ranges, strings, formats, objects, arrays, applicators, options,
errors.  Languages are checked on the compiled byte DFA (and, for numbers, with Python `re`)."""
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar import Grammar, GrammarError, RecursionNotSupportedError  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import (  # noqa: E402
    IndentSpec, InvalidSchemaError, OneOfOverlapError, UnsupportedSchemaError, compile_json_schema,
    lower_json_schema,
)
from formwork.grammar.json_schema.automata import SHARED, accepts as dfa_accepts  # noqa: E402
from formwork.grammar.json_schema.multiples import multiple_of_integer  # noqa: E402
from formwork.grammar.json_schema.numbers import integer_range, number_range  # noqa: E402


def dfa(schema, **options):
    options.setdefault("max_nesting_depth", 1)  # small any-JSON automata keep the tests fast
    return SHARED.compile(lower_json_schema(schema, **options).node)


def accepts(schema, text, **options) -> bool:
    return dfa_accepts(dfa(schema, **options), text.encode("utf-8"))


def check(schema, good, bad, **options):
    d = dfa(schema, **options)
    for text in good:
        assert dfa_accepts(d, text.encode()), f"should accept {text!r}"
    for text in bad:
        assert not dfa_accepts(d, text.encode()), f"should reject {text!r}"


# ------------------------------------------------------------------------------- numbers
decimals = st.builds(lambda i, f, neg: Decimal(("-" if neg else "") + str(i) + ("." + f if f else "")),
                     st.integers(0, 1200), st.sampled_from(["", "0", "5", "05", "25", "999", "001", "3333"]),
                     st.booleans())


@settings(max_examples=150, deadline=None)
@given(lo=st.none() | decimals, hi=st.none() | decimals, lo_strict=st.booleans(),
       hi_strict=st.booleans(), x=decimals)
def test_number_range_is_exact(lo, hi, lo_strict, hi_strict, x):
    pattern = number_range(lo, lo_strict, hi, hi_strict)
    inside = (lo is None or (x > lo if lo_strict else x >= lo)) and \
             (hi is None or (x < hi if hi_strict else x <= hi))
    text = format(x, "f")
    if text.startswith("-") and x == 0:
        text = text[1:]
    got = pattern is not None and re.fullmatch(pattern, text) is not None
    assert got == inside, (lo, lo_strict, hi, hi_strict, text, pattern)


@settings(max_examples=150, deadline=None)
@given(lo=st.none() | st.integers(-3000, 3000), hi=st.none() | st.integers(-3000, 3000),
       x=st.integers(-5000, 5000))
def test_integer_range_is_exact(lo, hi, x):
    pattern = integer_range(lo, hi)
    inside = (lo is None or x >= lo) and (hi is None or x <= hi)
    assert (pattern is not None and re.fullmatch(pattern, str(x)) is not None) == inside


@pytest.mark.parametrize("k", [2, 3, 4, 5, 6, 10, 12, 25, 60, 100])
def test_multiple_of_integer(k):
    patterns = [re.compile(p) for p in multiple_of_integer(k)]
    for x in range(-400, 401):
        assert all(p.fullmatch(str(x)) for p in patterns) == (x % k == 0)
    assert not all(p.fullmatch("-0") for p in patterns)


def test_number_schemas():
    check({"type": "integer", "minimum": 1.5, "exclusiveMaximum": 10}, ["2", "9"], ["1", "10", "2.0", "-0"])
    check({"type": "number", "exclusiveMinimum": 0, "maximum": 1}, ["0.5", "1", "1.0", "0.0001"],
          ["0", "0.0", "1.01", "-0.5", "1e-3"])
    check({"type": "number"}, ["1e5", "-0.5E-3", "0", "12.50"], ["01", "1.", ".5", "+1", "NaN"])
    check({"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 30}, ["0", "14", "28"], ["7.0", "13", "35"])
    check({"type": "number", "multipleOf": 3}, ["-9", "300"], ["3.5", "4"])


def test_fractional_multiple_of_past_the_budget_is_an_error_naming_keyword_and_pointer():
    with pytest.raises(UnsupportedSchemaError) as err:  # 0.07: residues mod 7, as for integers
        lower_json_schema({"properties": {"p": {"multipleOf": 0.07}}})
    assert err.value.keyword == "multipleOf" and err.value.pointer == "/properties/p/multipleOf"


# ------------------------------------------------------------------------------- strings
def test_string_lengths_count_code_points_in_canonical_spelling():
    schema = {"type": "string", "minLength": 2, "maxLength": 3}
    check(schema, ['"ab"', '"a\\n"', '"éx"', '"é\U0001F600"', '"\\u0000\\"x"'],
          ['"a"', '"abcd"', '"\\ud83d"', '"\\u00e9x"', '"\\u0041b"'])
    assert accepts({"type": "string", "maxLength": 1}, json.dumps("😀", ensure_ascii=False))
    assert accepts({"type": "string", "maxLength": 1}, '"\\ud83d\\ude00"') is False  # canonical only
    check({"type": "string"}, ['"\\ud83d\\ude00"', '"\\u0041"', '"\\/"'], ['"\\ud83d"', '"\\x41"', '"a\nb"'])


def test_pattern_is_a_search_on_the_decoded_value():
    check({"type": "string", "pattern": "a\"b"}, ['"xa\\"by"'], ['"xab"'])
    check({"type": "string", "pattern": "^[0-9]+$"}, ['"123"'], ['"12a"', '""'])
    check({"type": "string", "pattern": "\\n"}, ['"x\\ny"'], ['"xy"'])


@pytest.mark.parametrize("fmt,good,bad", [
    ("date", ["2024-02-29", "2000-02-29"], ["2023-02-29", "1900-02-29", "2024-13-01"]),
    ("time", ["23:59:60Z", "08:30:06.5+01:00"], ["24:00:00Z", "12:00:00"]),
    ("date-time", ["1963-06-19T08:30:06.283185Z"], ["1963-06-19 08:30:06Z"]),
    ("duration", ["P4DT12H30M5S", "P1W", "PT0S"], ["P", "PT", "P1DT"]),
    ("email", ["a.b@example.com", "\"x y\"@ex.org"], ["a..b@ex.com", "@ex.com"]),
    ("hostname", ["www.example.com", "a--b.com"], ["-a.com", "xn--abc.com", "a_b.com"]),
    ("ipv4", ["192.168.0.1"], ["256.1.1.1", "01.1.1.1"]),
    ("ipv6", ["::1", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4"], ["1::2::3", "12345::"]),
    ("uuid", ["123e4567-e89b-42d3-a456-426614174000"], ["123e4567e89b42d3a456426614174000"]),
    ("uri", ["https://ex.com/a?b=c#d", "urn:isbn:0451"], ["/rel", "http://a b"]),
    ("uri-reference", ["/rel/path?q", "#frag", "https://x.y"], ["\\\\share"]),
])
def test_formats(fmt, good, bad):
    check({"type": "string", "format": fmt}, [json.dumps(g) for g in good], [json.dumps(b) for b in bad])


# ------------------------------------------------------------------------------- objects
def test_properties_in_schema_order_with_optional_and_required():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                               "c": {"type": "boolean"}}, "required": ["b"]}
    check(schema, ['{"b":"x"}', '{"a":1,"b":"x","c":true}', '{"b":"x","zz":[1]}'],
          ['{}', '{"a":1}', '{"b":"x","a":1}', '{"b":"x","b":"y"}', '{"b":"x","a":1}'])


def test_extra_keys_never_spell_declared_names():
    schema = {"type": "object", "properties": {"ab": {"type": "integer"}}}
    check(schema, ['{"a":"x"}', '{"abc":"x"}', '{"ab":1}'], ['{"ab":"x"}', '{"ab":1,"ab":2}'])
    closed = {"type": "object", "properties": {"ab": {"type": "integer"}}, "additionalProperties": False}
    check(closed, ['{}', '{"ab":1}'], ['{"a":1}'])
    check(schema, ['{"ab":1}'], ['{"x":1}'], forbid_additional_properties=True)


def test_pattern_properties_and_additional_schema():
    schema = {"type": "object", "patternProperties": {"^x-": {"type": "integer"}},
              "additionalProperties": {"type": "string"}, "minProperties": 1, "maxProperties": 2}
    check(schema, ['{"x-a":1}', '{"x-a":1,"y":"s"}'], ['{}', '{"x-a":"s"}', '{"y":1}', '{"a":"1","b":"2","c":"3"}'])


def test_all_of_merges_objects_into_one_member_order():
    schema = {"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                        {"properties": {"b": {"minimum": 3}}, "required": ["b"]}]}
    check(schema, ['{"a":1,"b":3}'], ['{"a":1}', '{"a":1,"b":2}', '{"a":"x","b":4}'])


# ------------------------------------------------------------------------------- arrays
def test_arrays():
    check({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
          ['[]', '[1]', '[1,"a"]'], ['[1,"a",2]', '["a"]'])
    check({"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 3},
          ['[true,false]', '[true,true,true]'], ['[true]', '[true,true,true,true]'])
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "integer"}],
              "additionalItems": {"type": "string"}}
    check(draft7, ['[1,"a","b"]', '[]'], ['[1,2]', '["a"]'])


# ------------------------------------------------------------------------------- applicators
def test_enum_and_const_are_filtered_by_sibling_keywords():
    check({"type": "string", "enum": ["a", 1, None, "bb"], "maxLength": 1}, ['"a"'], ['1', 'null', '"bb"'])
    check({"const": {"k": [1, 2.0]}}, ['{"k":[1,2]}', '{"k": [1, 2]}'], ['{"k":[1,2.0]}', '{"k":[2,1]}'])


def test_one_of_disjoint_and_scalar_overlap_are_exact():
    check({"oneOf": [{"type": "string"}, {"type": "integer"}]}, ['"s"', '3'], ['null'])
    check({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, ['1', '2.5', '"s"'], ['3', '1.5', '2.0'])


def test_one_of_overlap_without_an_exact_complement_is_an_error_or_a_warning():
    # overlapping objects are exact where the other branch has a complement by shape
    # (tests/test_json_one_of_overlap.py); propertyNames has none
    schema = {"oneOf": [{"required": ["a"]}, {"propertyNames": {"maxLength": 1}}]}
    with pytest.raises(OneOfOverlapError) as err:
        lower_json_schema(schema)
    assert err.value.pointer == "/oneOf/1"
    lowered = lower_json_schema(schema, lenient=True)
    assert any("oneOf" in w for w in lowered.warnings)


def test_ref_is_inlined_and_cycles_become_rules():
    schema = {"$defs": {"n": {"type": "integer", "minimum": 0}},
              "properties": {"a": {"$ref": "#/$defs/n"}}, "required": ["a"], "type": "object"}
    check(schema, ['{"a":0}'], ['{"a":-1}'])
    cyclic = {"$defs": {"t": {"type": "object", "properties": {"c": {"$ref": "#/$defs/t"}}}}, "$ref": "#/$defs/t"}
    assert isinstance(lower_json_schema(cyclic).node, Grammar)  # recursion, compiled by grammar.cfg
    with pytest.raises(RecursionNotSupportedError):  # indentation depends on the depth
        lower_json_schema(cyclic, whitespace=IndentSpec(2))


def test_unsupported_keyword_error_and_lenient_warning():
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"type": "array", "items": {"type": "string", "pattern": "(a)\\1"}})
    assert err.value.keyword == "pattern" and err.value.pointer == "/items/pattern"
    grammar = compile_json_schema({"type": "array", "items": {"type": "string", "pattern": "(a)\\1"}},
                                  byte_vocab(), lenient=True,
                                  compiler=GrammarCompiler(byte_vocab(), cache_enabled=False))
    assert any("pattern" in w for w in grammar.warnings)


def test_bad_schemas_raise_grammar_errors():
    for bad in ["{not json", '{"type": 3}', 17]:
        with pytest.raises(InvalidSchemaError):
            lower_json_schema(bad)
    assert issubclass(InvalidSchemaError, GrammarError)


# ------------------------------------------------------------------------------- options
def test_whitespace_policies():
    value = {"a": [1, None], "c": "x"}
    schema = {"type": "object", "properties": {"a": {"type": "array"}, "c": {"type": "string"}}}
    compact, spaced = json.dumps(value, separators=(",", ":")), json.dumps(value)
    check(schema, [compact, spaced], ['{"a": [1, null],\n"c": "x"}', '{ "a":[1],"c":"x"}'])
    check(schema, [compact], [spaced], whitespace="compact")
    check(schema, [json.dumps(value, indent=2)], [compact], whitespace=IndentSpec(2))
    check(schema, [compact, '{ "a" :\n[1 , null],\t"c":"x" }'], ['{   "a":[1],"c":"x"}'],
          whitespace="free", max_whitespace=2)


def test_unconstrained_values_nest_to_the_configured_depth():
    check(True, ['[[1]]', '{"a":{"b":1}}', '[{}]'], ['[[[1]]]', '{"a":{"b":[]}}'], max_nesting_depth=2)
    check({}, ['"x"', '1'], ['[1]'], max_nesting_depth=0)


def test_compile_json_schema_gives_a_matcher():
    vocab = byte_vocab()
    grammar = compile_json_schema('{"type": "boolean"}', vocab)
    m = grammar.matcher()
    assert m.accept_string("tru") and not m.can_terminate()
    assert m.accept_string("e") and m.can_terminate()
    assert compile_json_schema('{"type": "boolean"}', vocab) is grammar  # cached by spec


def test_regex_and_modulus_limits_are_errors_naming_keyword_and_pointer():
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"properties": {"p": {"type": "string", "pattern": "a\\Bb"}}})
    assert err.value.keyword == "pattern" and err.value.pointer == "/properties/p/pattern"
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"type": "integer", "multipleOf": 7})
    assert err.value.keyword == "multipleOf" and err.value.pointer == "/multipleOf"
    lowered = lower_json_schema({"type": "integer", "multipleOf": 7}, lenient=True)
    assert any("multipleOf" in w for w in lowered.warnings)


def test_enum_and_const_values_are_kept_only_when_every_sibling_accepts_them():
    mixed = [1, 1.0, 2.5, True, "1", None, [1], {"a": 1}]
    check({"type": "integer", "enum": mixed}, ["1"], ["2.5", "true", '"1"', "null", "[1]"])
    check({"type": ["string", "null"], "enum": mixed}, ['"1"', "null"], ["1", "true", "2.5"])
    check({"enum": mixed}, ["1", "2.5", "true", '"1"', "null", "[1]", '{"a": 1}'], ["2", "false"])
    check({"allOf": [{"enum": mixed}, {"type": "number", "minimum": 2}]}, ["2.5"], ["1", "true"])
    check({"allOf": [{"const": 3}, {"type": "integer"}, {"title": "t"}]}, ["3"], ["3.0", "4"])
    check({"const": "a", "enum": ["b"]}, [], ['"a"', '"b"'])
