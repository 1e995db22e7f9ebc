"""`not`: the matcher agrees with jsonschema on random negatable subschemas (scalars by canonical
spelling, objects and arrays by their shape) over a small value domain; each refusal's message."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import LEAVES, NEGATABLE, assert_agrees  # noqa: E402

from formwork.grammar import Grammar, GrammarBudgetError  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, lower_json_schema  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(NEGATABLE)
def test_not_is_exact(sub):
    assert_agrees({"not": sub})


@SETTINGS
@given(LEAVES, NEGATABLE)
def test_not_beside_other_keywords_is_exact(positive, sub):
    assert_agrees({**positive, "not": sub} if isinstance(positive, dict) else
                  {"allOf": [positive, {"not": sub}]})


@SETTINGS
@given(NEGATABLE, st.sampled_from(["a", "b"]))
def test_not_inside_a_property_is_exact(sub, name):
    assert_agrees({"type": "object", "properties": {name: {"not": sub}}})


def _draft07(s):
    """`s` in draft-07 terms: positional `items` for `prefixItems` (dropping an `items` beside a
    non-empty one: past a prefix, its complement needs minContains, which draft-07 lacks)."""
    if isinstance(s, list):
        return [_draft07(v) for v in s]
    if not isinstance(s, dict):
        return s
    out = {k: _draft07(v) for k, v in s.items() if k not in ("prefixItems", "items")}
    if s.get("prefixItems"):
        out["items"] = _draft07(s["prefixItems"])
    elif "items" in s:
        out["items"] = _draft07(s["items"])
    return out


@SETTINGS
@given(NEGATABLE)
def test_draft07_not_is_exact(sub):
    assert_agrees({"not": _draft07(sub)}, draft="draft-07")


def test_examples():
    assert_agrees({"not": {"type": "integer"}})  # 1.0 is an integer: no spelling of it passes
    assert_agrees({"type": "number", "not": {"multipleOf": 2}}, [1, 2, 2.0, 3, 1.5, -4, 0])
    assert_agrees({"type": "string", "not": {"pattern": "^a", "maxLength": 2}},
                  ["", "a", "ab", "abc", "b", "ba"])
    assert_agrees({"not": {"required": ["a"]}})
    assert_agrees({"not": {"type": "object", "properties": {"a": {"type": "string"}}}})
    assert_agrees({"not": {"enum": [{"a": 1}, [1], "a"]}})
    assert_agrees({"type": "array", "not": {"prefixItems": [{"type": "integer"}], "maxItems": 2}},
                  [[], [1], ["a"], [1, 2], [1, 2, 3], ["a", 2, 3]])


def test_dependency_keywords_are_negated_through_their_alternatives():
    objects = [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 2}, {"a": "x", "b": 1, "c": 3}, 3, None]
    assert_agrees({"not": {"dependentRequired": {"a": ["b"]}}}, objects)
    assert_agrees({"not": {"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}}},
                  objects)
    assert_agrees({"if": {"dependentRequired": {"a": ["b"]}}, "then": {"required": ["c"]},
                   "else": {"maxProperties": 1}}, objects)
    assert_agrees({"oneOf": [{"dependentRequired": {"a": ["b"]}}, {"required": ["a"]}]}, objects)


def test_contains_is_negated_by_counts():
    arrays = [[], [1], ["a"], [1, "a"], ["a", "b"], [1, 2], [1, 2, 3], ["a", 1, 2, 3], {}, 1]
    assert_agrees({"not": {"contains": {"type": "integer"}}}, arrays)
    assert_agrees({"not": {"contains": {"type": "integer"}, "minContains": 2}}, arrays)
    assert_agrees({"not": {"contains": {"type": "integer"}, "minContains": 0, "maxContains": 1}},
                  arrays)
    assert_agrees({"if": {"contains": {"const": 1}}, "then": {"maxItems": 2},
                   "else": {"minItems": 1}}, arrays)
    assert_agrees({"not": {"contains": {"type": "integer"}}}, arrays, draft="draft-07")


def test_recursion_through_a_complement_stays_exact():
    # a member "a" must not hold an object of the same kind: the complement is taken by shape,
    # so the recursion is a positive grammar rule
    schema = {"$defs": {"t": {"type": "object", "properties": {"a": {"not": {"$ref": "#/$defs/t"}}}}},
              "$ref": "#/$defs/t"}
    assert isinstance(lower_json_schema(schema, max_nesting_depth=None).node, Grammar)
    assert_agrees(schema, [{}, {"a": 1}, {"a": {}}, {"a": {"a": 1}}, {"a": {"a": {}}},
                           {"a": {"a": {"a": 2}}}, {"a": {"a": {"a": {}}}}, 3])


def _refusal(schema):
    """The error's text; lenient, the same text as a warning."""
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema(schema)
    lowered = lower_json_schema(schema, lenient=True)
    assert lowered.warnings and str(err.value) in lowered.warnings
    return str(err.value)


@pytest.mark.parametrize("schema, message", [
    ({"not": {"prefixItems": [True] * 6, "items": {"type": "integer"}}},
     "not at /not: the complement cannot be built exactly: 'items' at /not/items: the arrays "
     "violating it are one schema per set of the 6 positions before it (at most 5)"),
    ({"not": {"propertyNames": {"maxLength": 1}}},
     "not at /not: the complement cannot be built exactly: 'propertyNames' at "
     "/not/propertyNames: the objects violating it (through a member name it rejects) are not "
     "described by a schema of their own"),
    ({"not": {"type": "string", "format": "email"}},
     "not at /not: the complement cannot be built exactly: format 'email' at /not is enforced "
     "more strictly than specified, so its complement would admit matching strings"),
])
def test_refusals_name_keyword_and_pointer(schema, message):
    assert _refusal(schema) == message


@pytest.mark.parametrize("pattern", ["(?<=a)b", "(?P<x>a)", "a(?=b)", "(?i)a", "a++"])
def test_the_regex_format_has_no_complement(pattern):
    """`format: regex` is a regular subset of the regexes jsonschema's re.compile accepts: a
    complement admitted these valid regexes, so `not` (and a oneOf exclusion) is refused."""
    import re

    re.compile(pattern)  # valid for the oracle, outside formwork's subset
    assert _refusal({"type": "string", "not": {"format": "regex"}}) == (
        "not at /not: the complement cannot be built exactly: format 'regex' at /not is enforced "
        "more strictly than specified, so its complement would admit matching strings")
    from formwork.grammar.json_schema.errors import OneOfOverlapError

    with pytest.raises(OneOfOverlapError, match="format 'regex' at /oneOf/0 is enforced more strictly"):
        lower_json_schema({"oneOf": [{"type": "string", "format": "regex"}, {"type": "string"}]})



def test_member_wise_keywords_are_negated_by_a_witness_member():
    objects = [{}, {"a": 1}, {"a": "x"}, {"b": 1}, {"c": 1}, {"c": "s"}, {"a": 1, "b": 2},
               {"a": 1, "c": 2}, {"a": 1, "b": 2, "c": 3}, {"b": None, "d": 1}, {"x1": 1},
               {"x1": "s", "d": "t"}, {"x1": 1, "x2": "s"}, 3]
    assert_agrees({"type": "object", "not": {"properties": {"a": {"type": "integer"}, "b": True},
                                             "additionalProperties": False}}, objects)
    assert_agrees({"not": {"properties": {"a": True}, "additionalProperties": {"type": "string"}}},
                  objects)
    assert_agrees({"not": {"patternProperties": {"^x": {"type": "integer"}}}}, objects)
    assert_agrees({"not": {"patternProperties": {"^x": {"type": "integer"}},
                           "additionalProperties": {"type": "string"}}}, objects)
    assert_agrees({"maxProperties": 2, "properties": {"a": {"type": "integer"}},
                   "not": {"properties": {"b": True}, "additionalProperties": {"type": "string"}}},
                  objects)
    # past the former limit of 5 declared names (one schema per set of them)
    names = {k: True for k in "abcdef"}
    assert_agrees({"not": {"properties": names, "additionalProperties": False}},
                  objects + [{k: 1 for k in "abcdef"}, {"a": 1, "g": 2}])


def test_witness_members_agree_with_jsonschema_inside_const_checks():
    # an object const is checked against the conjunction by jsonschema: the witness keyword is
    # handed to it as the `not` it stands for
    assert_agrees({"const": {"a": 1}, "not": {"additionalProperties": {"type": "string"}}})
    assert_agrees({"enum": [{"a": "x"}, {"b": 1}], "not": {"additionalProperties": {"type": "string"}}})


def test_too_many_ways_to_violate_is_a_budget_error_with_the_pointer():
    values = [{"a": i, "b": i} for i in range(4)]  # 5 ways to differ from each: 5 ** 4 > 256
    with pytest.raises(GrammarBudgetError) as err:
        lower_json_schema({"not": {"enum": values}})
    assert str(err.value) == ("the complement of the schema at /not splits into more than 256 "
                              "alternatives (ways to violate it)")


def test_unevaluated_keywords_are_negated_like_additional_ones():
    objects = [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"foo": 1}, {"foo": 1, "bar": 2}, 3, [1]]
    assert_agrees({"not": {"properties": {"a": True}, "unevaluatedProperties": False}}, objects)
    assert_agrees({"not": {"anyOf": [True, {"properties": {"foo": True}}],
                           "unevaluatedProperties": False}}, objects)
    arrays = [[], [1], [1, 2], ["a"], [1, "a", 3], {}, 1]
    assert_agrees({"not": {"prefixItems": [{"type": "integer"}], "unevaluatedItems": False}}, arrays)
    assert_agrees({"not": {"allOf": [{"prefixItems": [True, True]}], "unevaluatedItems": False}},
                  arrays)


def test_draft07_additional_items_has_no_complement_past_a_prefix():
    schema = {"not": {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}}}
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema(schema, draft="draft-07")
    assert str(err.value) == (
        "not at /not: the complement cannot be built exactly: 'additionalItems' at "
        "/not/additionalItems: the arrays violating it count the elements it rejects "
        "(minContains, which draft-07 lacks)")
    assert_agrees({"not": {"items": {"type": "integer"}}},  # no prefix: contains alone
                  [[], [1], ["a"], [1, "a"], [1, 2], {}, 1], draft="draft-07")


def test_unique_items_has_no_complement():
    schema = {"not": {"prefixItems": [{"enum": [1, 2]}, {"enum": [1, 2]}], "items": False,
                      "uniqueItems": True}}
    assert _refusal(schema) == (
        "not at /not: the complement cannot be built exactly: 'uniqueItems' at /not/uniqueItems: "
        "the arrays violating it (through a repeated element) are not described by a schema of "
        "their own")


def test_repeated_elements_need_no_complement_beside_unique_items():
    # the arrays asked for are unique already: none violates the target's uniqueItems
    arrays = [[], [1], [2], [1, 2], [2, 1], [1, 1], [1, 2, 1], ["a"], {}, 1]
    assert_agrees({"type": "array", "uniqueItems": True, "items": {"enum": [1, 2]},
                   "not": {"uniqueItems": True, "maxItems": 1}}, arrays)
    assert_agrees({"oneOf": [{"type": "array", "uniqueItems": True, "items": {"type": "integer"}},
                             {"type": "array", "uniqueItems": True, "maxItems": 1}]}, arrays)
