"""`unevaluatedProperties`/`unevaluatedItems` beside allOf, oneOf, if/then/else, $ref,
dependentSchemas and anyOf: the matcher agrees with jsonschema on random schemas and instances
(for an anyOf nested deeper it never accepts an invalid instance: one matching several branches
may be rejected, the documented conservative corner); the refusal beside `contains`."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import VALIDATORS, assert_exact, matcher_accepts  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.json_schema import (  # noqa: E402
    UnsupportedSchemaError, compile_json_schema, lower_json_schema,
)

KEYS = ["a", "b", "c", "xa"]
VALUES = st.one_of(st.integers(1, 2), st.sampled_from(["s"]))
MEMBER = st.sampled_from([True, {"type": "integer"}, {"type": "string"}])
UNEVALUATED = st.sampled_from([False, {"type": "integer"}, {"type": "string"}])


@st.composite
def branches(draw, tag=None):
    """An object schema evaluating some keys; tagged by t's const (for oneOf and if, whose
    complements `not` takes), only with properties."""
    branch = {}
    props = {k: draw(MEMBER) for k in draw(st.lists(st.sampled_from(KEYS[:3]), max_size=2,
                                                      unique=True))}
    if tag is not None:
        props["t"] = {"const": tag}
        branch["required"] = ["t"]
    if props:
        branch["properties"] = props
    if tag is None and draw(st.integers(0, 3)) == 0:
        branch["patternProperties"] = {"^x": draw(MEMBER)}
    if tag is None and draw(st.integers(0, 5)) == 0:
        branch["additionalProperties"] = draw(MEMBER)
    if tag is None and draw(st.integers(0, 4)) == 0:
        branch["unevaluatedProperties"] = draw(MEMBER)
    return branch


@st.composite
def object_schemas(draw, any_of=False):
    kind = "anyOf" if any_of else draw(st.sampled_from(["allOf", "oneOf", "if", "$ref",
                                                        "dependentSchemas", "nested"]))
    schema = {"unevaluatedProperties": draw(UNEVALUATED)}
    if kind == "allOf":
        schema["allOf"] = [draw(branches()), draw(branches())]
    elif kind == "anyOf":
        schema["anyOf"] = [draw(branches()), draw(branches())]
    elif kind == "oneOf":
        schema["oneOf"] = [draw(branches(1)), draw(branches(2))]
    elif kind == "if":
        schema["if"] = draw(branches(1))
        schema["then"] = draw(branches(1))
        if draw(st.booleans()):
            schema["else"] = draw(branches())
    elif kind == "$ref":
        schema["$defs"] = {"d": draw(branches())}
        schema["$ref"] = "#/$defs/d"
    elif kind == "dependentSchemas":
        schema["dependentSchemas"] = {draw(st.sampled_from(KEYS)): draw(branches())}
    else:  # the keyword inside an allOf branch sees only its own branch
        schema = {"allOf": [draw(branches()), {**draw(branches()), **schema}]}
    if draw(st.booleans()):
        schema["properties"] = {"c": draw(MEMBER)}
    return schema


@st.composite
def array_schemas(draw):
    def prefix():
        return {"prefixItems": draw(st.lists(MEMBER, min_size=1, max_size=3))}
    kind = draw(st.sampled_from(["allOf", "oneOf", "$ref", "items"]))
    schema = {"unevaluatedItems": draw(UNEVALUATED)}
    if kind == "allOf":
        schema["allOf"] = [prefix(), prefix()]
    elif kind == "oneOf":
        schema["oneOf"] = [{**prefix(), "minItems": 2}, {**prefix(), "maxItems": 1}]
    elif kind == "$ref":
        schema["$defs"] = {"d": prefix()}
        schema["$ref"] = "#/$defs/d"
    else:
        schema["allOf"] = [{"items": draw(MEMBER)}]
    return schema


OBJECTS = st.lists(st.dictionaries(st.sampled_from(KEYS + ["t"]), VALUES, max_size=4),
                   min_size=12, max_size=12)
_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(object_schemas(), OBJECTS)
def test_unevaluated_properties_is_exact(schema, objects):
    assert_exact(schema, objects)


@_SETTINGS
@given(array_schemas(), st.lists(st.lists(VALUES, max_size=4), min_size=10, max_size=10))
def test_unevaluated_items_is_exact(schema, arrays):
    assert_exact(schema, arrays)


@_SETTINGS
@given(object_schemas(any_of=True), OBJECTS)
def test_unevaluated_properties_beside_any_of_is_exact(schema, objects):
    assert_exact(schema, objects)


@_SETTINGS
@given(st.lists(branches(), min_size=2, max_size=2), UNEVALUATED, OBJECTS)
def test_any_of_nested_deeper_accepts_only_valid_instances(any_of, unevaluated, objects):
    schema = {"allOf": [{"anyOf": any_of}], "unevaluatedProperties": unevaluated}
    grammar = compile_json_schema(schema, byte_vocab())
    validator = VALIDATORS["2020-12"](schema)
    for instance in objects:
        if matcher_accepts(grammar, instance):
            assert validator.is_valid(instance), (schema, instance)


def test_any_of_instances_matching_several_branches():
    schema = {"anyOf": [{"properties": {"a": True}, "required": ["a"]},
                        {"properties": {"b": True}, "required": ["b"]}],
              "unevaluatedProperties": False}
    assert_exact(schema, [{"a": 1}, {"b": 1}, {"a": 1, "b": 1}, {"a": 1, "c": 1}, {"c": 1}])


def test_unevaluated_items_beside_contains_is_refused():
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"allOf": [{"contains": {"const": 1}}], "unevaluatedItems": False})
    assert str(err.value) == (
        "unevaluatedItems at /unevaluatedItems: the contains at /allOf/0/contains evaluates the "
        "elements that match it, which depend on the element values; not supported")


def test_patterns_the_evaluated_keys_repeat_are_counted_once():
    # three patterns of the schema and their copies in what each alternative evaluates: within
    # the budget of four distinct patterns per object
    schema = {"patternProperties": {"^a": {"type": "integer"}, "^b": True, "^c": True},
              "allOf": [{"properties": {"x": True}}], "unevaluatedProperties": False}
    assert_exact(schema, [{"a": 1}, {"a": "s"}, {"b": 1, "x": 2}, {"d": 1}, {"ab": 1, "c": 2}])


def test_if_alone_lends_its_annotations_where_it_holds():
    schema = {"if": {"properties": {"a": {"const": 1}}, "required": ["a"]},
              "unevaluatedProperties": False}
    assert_exact(schema, [{"a": 1}, {"a": 2}, {}, {"b": 1}, {"a": 1, "b": 1}])
    assert_exact({"if": {"prefixItems": [{"const": 1}]}, "unevaluatedItems": False},
                 [[1], [2], [], [1, 1]])
