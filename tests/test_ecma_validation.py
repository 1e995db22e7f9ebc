"""jsonschema validators that read regexes as formwork compiles them (`ecma_validation`): the
lowering's enum / const / propertyNames checks and the SDK's output check no longer raise on
`\\p{..}` or ECMAScript named groups, and agree with jsonschema wherever Python reads a regex alike."""
from __future__ import annotations

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from formwork.grammar.automaton import compile_dfa
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema.ecma_validation import ecma_validator, search
from formwork.schemas.keywords import regex_problem
from formwork.sdk.errors import OutputValidationError
from formwork.sdk.output_types import JsonSchema, OutputFormat


@pytest.mark.parametrize("pattern, text, found", [
    ("^\\p{Lu}", "Ábc", True), ("^\\p{Lu}", "ábc", False),
    ("(?<year>[0-9]{4})-", "in 2024-05", True), ("^(?<year>[0-9]{4})$", "24", False),
    ("a$", "a\n", False),  # ECMA-262: `$` is the end of input (Python: also before a final newline)
    ("^\\d$", "\u0663", False),  # ECMA-262: `\d` is [0-9] (Python: any Unicode digit)
    ("^\\w$", "é", False),
    ("b", "abc", True),  # search, not a full match
])
def test_search_reads_ecma_regexes(pattern: str, text: str, found: bool) -> None:
    assert search(pattern, text) is found


def test_a_backreference_is_left_to_python() -> None:
    assert search("(a)\\1", "xaa") and not search("(a)\\1", "ab")


def _accepted(schema: dict, value: str) -> bool:
    return compile_dfa(lower_json_schema(schema).node).accepts(value.encode())


@pytest.mark.parametrize("schema, kept, dropped", [
    ({"type": "string", "pattern": "^\\p{L}+$", "enum": ["ab", "1"]}, '"ab"', '"1"'),
    ({"type": "string", "pattern": "^(?<x>a)$", "enum": ["a", "b"]}, '"a"', '"b"'),
    ({"type": "string", "pattern": "^a$", "enum": ["a", "a\n"]}, '"a"', '"a\\n"'),
    ({"type": "object", "patternProperties": {"^\\p{L}+$": {"type": "integer"}}, "additionalProperties": False,
      "enum": [{"a": 1}, {"1": 1}, {"a": "x"}]}, '{"a":1}', '{"1":1}'),
    ({"type": "object", "propertyNames": {"pattern": "^(?<k>[a-z])$"}, "properties": {"a": {}, "B": {}}},
     '{"a":1}', '{"B":1}'),
])
def test_the_lowering_checks_values_with_ecma_regexes(schema: dict, kept: str, dropped: str) -> None:
    """These raised `re.error` while lowering (jsonschema's `re`), or kept a value that the
    pattern, read as ECMA-262, refuses ("a\\n" against `^a$`)."""
    assert _accepted(schema, kept)
    assert not _accepted(schema, dropped)


def test_the_sdk_checks_outputs_with_ecma_regexes() -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(?<major>\\d+)\\.\\p{N}+$"}},
              "required": ["v"]}
    output = OutputFormat(JsonSchema(schema))
    assert output.parse('{"v": "1.2"}') == {"v": "1.2"}
    with pytest.raises(OutputValidationError, match="does not match"):
        output.parse('{"v": "1.x"}')


_PIECES = ["a", "b", "[ab]", "[^a]", "x", "(a|b)", "?", "*", "+", "{1,2}", "^", "$", "-", "[0-9]"]
_KEYS = st.text(alphabet="abx0-", max_size=4)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map("".join),
       st.dictionaries(_KEYS, st.integers(0, 2) | st.text(alphabet="ab", max_size=2), max_size=4),
       st.booleans())
def test_the_validator_agrees_with_jsonschema_where_python_reads_alike(pattern: str, instance: dict,
                                                                       closed: bool) -> None:
    """On regexes Python reads as ECMA-262 does (no `$` before a newline: the keys hold none), every
    keyword the validator replaces gives jsonschema's verdict and error count."""
    assume(regex_problem(pattern) is None)  # else the compile refuses it (`a**`, `{1,2}`)
    schema = {"properties": {"a": {"type": "integer"}},
              "patternProperties": {pattern: {"type": "string", "pattern": pattern}},
              "additionalProperties": not closed and {"type": "integer"}}
    plain = jsonschema.Draft202012Validator(schema)
    ecma = ecma_validator(jsonschema.Draft202012Validator)(schema)
    assert len(list(ecma.iter_errors(instance))) == len(list(plain.iter_errors(instance)))
    assert ecma.is_valid(instance) == plain.is_valid(instance)
