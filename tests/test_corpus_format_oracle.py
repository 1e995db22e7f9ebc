"""The corpus benchmark's validity oracle knows the OpenAPI formats formwork asserts (`int32`,
`int64`, `uint32`, `uint64`, `byte`): its verdict, computed with the standard library, equals the
grammar's on random values, so a corpus instance labelled valid is one formwork must accept."""
import json
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st
from jsonschema import Draft4Validator

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import matcher_accepts  # noqa: E402
from real_world_corpus import make_validator  # noqa: E402

from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

INTEGER_FORMATS = ("int32", "int64", "uint32", "uint64")
EDGES = [0, -1, 2 ** 31 - 1, 2 ** 31, -2 ** 31, -2 ** 31 - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, 2 ** 63,
         -2 ** 63, -2 ** 63 - 1, 2 ** 64 - 1, 2 ** 64]
_GRAMMARS: dict[str, object] = {}


def grammar(schema: dict) -> object:
    key = json.dumps(schema, sort_keys=True)
    if key not in _GRAMMARS:
        _GRAMMARS[key] = compile_json_schema(schema, byte_vocab())
    return _GRAMMARS[key]


@settings(max_examples=80, deadline=None)
@given(fmt=st.sampled_from(INTEGER_FORMATS),
       value=st.one_of(st.sampled_from(EDGES), st.integers(-2 ** 70, 2 ** 70), st.floats(-1e21, 1e21)))
def test_integer_formats_agree_with_the_grammar(fmt, value):
    schema = {"type": "number", "format": fmt}
    oracle = make_validator(schema, {}, Draft4Validator)
    assert matcher_accepts(grammar(schema), value) == oracle.is_valid(value), (fmt, value)


@settings(max_examples=80, deadline=None)
@given(text=st.one_of(st.text(alphabet="AQZaz09+/=", max_size=10), st.text(max_size=6),
                      st.binary(max_size=7).map(lambda b: __import__("base64").b64encode(b).decode())))
def test_byte_format_agrees_with_the_grammar(text):
    schema = {"type": "string", "format": "byte"}
    oracle = make_validator(schema, {}, Draft4Validator)
    assert matcher_accepts(grammar(schema), text) == oracle.is_valid(text), text


def test_out_of_range_integers_are_invalid_for_the_oracle():
    oracle = make_validator({"format": "int32"}, {}, Draft4Validator)
    assert oracle.is_valid(2 ** 31 - 1) and not oracle.is_valid(2 ** 31) and oracle.is_valid("x")


@settings(max_examples=60, deadline=None)
@given(key=st.text(alphabet="ax-é٣_", max_size=4), closed=st.booleans())
def test_pattern_properties_use_ecma_word_classes_like_the_grammar(key, closed):
    """`\\w` and `\\d` are ASCII in ECMA-262 (Python's `re` reads them as Unicode): a key like
    'x-é' does not match `^x-[\\w]+$` for either the oracle or the grammar."""
    schema = {"type": "object", "patternProperties": {r"^x-[\w\d]+$": {"type": "integer"}},
              "additionalProperties": not closed}
    oracle = make_validator(schema, {}, Draft4Validator)
    for value in (1, "s"):
        instance = {key: value}
        assert matcher_accepts(grammar(schema), instance) == oracle.is_valid(instance), instance


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="a\n", max_size=4))
def test_dollar_is_the_end_of_input_like_the_grammar(text):
    """ECMA-262's `$` matches only at the end (Python's also before a final newline)."""
    schema = {"type": "string", "pattern": "^a+$"}
    oracle = make_validator(schema, {}, Draft4Validator)
    assert matcher_accepts(grammar(schema), text) == oracle.is_valid(text), repr(text)
