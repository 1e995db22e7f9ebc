"""`dependentRequired`, `dependentSchemas` and draft-07 `dependencies`: the matcher agrees with
jsonschema on random schemas and objects over a small key domain; the bound's refusal."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact, matcher_accepts  # noqa: E402

from formwork.grammar import GrammarBudgetError  # noqa: E402
from formwork.grammar.json_schema import (  # noqa: E402
    UnsupportedSchemaError, compile_json_schema, lower_json_schema,
)

KEYS = ["a", "b", "c", "d"]
VALUES = st.one_of(st.integers(0, 2), st.sampled_from(["x"]))
REQUIRED = st.lists(st.sampled_from(KEYS), max_size=2, unique=True)
DEPENDENT = st.one_of(
    st.sampled_from([True, False, {"type": "integer"}, {"maxProperties": 2}, {"minProperties": 3},
                     {"properties": {"b": {"type": "integer"}}}, {"required": ["d"]},
                     {"properties": {"c": False}}, {"additionalProperties": {"type": "integer"}},
                     {"anyOf": [{"required": ["b"]}, {"required": ["c"]}]}]),
)
MEMBER = st.sampled_from([{}, {"type": "integer"}, {"type": "string"}])


@st.composite
def schemas(draw, draft07: bool = False):
    schema = {}
    triggers = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
    for key in triggers:
        if draw(st.booleans()):
            kw, value = "dependentRequired", draw(REQUIRED)
        else:
            kw, value = "dependentSchemas", draw(DEPENDENT)
        if draft07:
            kw = "dependencies"
        schema.setdefault(kw, {})[key] = value
    props = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
    if props:
        schema["properties"] = {k: draw(MEMBER) for k in props}
    required = draw(REQUIRED)
    if required:
        schema["required"] = required
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.sampled_from([False, {"type": "integer"}]))
    return schema


OBJECTS = st.lists(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4), min_size=10,
                   max_size=10)
_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(schemas(), OBJECTS)
def test_dependencies_are_exact(schema, objects):
    assert_exact(schema, objects + [3, "a"])


@_SETTINGS
@given(schemas(draft07=True), OBJECTS)
def test_draft07_dependencies_are_exact(schema, objects):
    assert_exact(schema, objects, draft="draft-07")


def test_examples():
    assert_exact({"dependentRequired": {"a": ["b"]}}, [{}, {"a": 1}, {"a": 1, "b": 2}, {"b": 1}])
    assert_exact({"dependentSchemas": {"a": False}}, [{}, {"a": 1}, {"b": 1}])
    assert_exact({"dependencies": {"a": ["b"], "c": {"maxProperties": 2}}},
                 [{}, {"a": 1}, {"a": 1, "b": 2}, {"c": 1, "a": 1, "b": 2}, {"c": 1, "x": 2}],
                 draft="draft-07")


def test_many_dependency_keys_are_refused():
    schema = {"properties": {"x": {"dependentRequired": {k: ["z"] for k in "abcdef"}}}}
    with pytest.raises(GrammarBudgetError) as err:
        lower_json_schema(schema)
    assert str(err.value) == (
        "dependentRequired at /properties/x/dependentRequired: 6 dependency keys in one schema "
        "object would expand into 64 alternatives (one per combination of present and absent "
        "keys); at most 5 keys are enforced")


def test_dependencies_outside_their_draft_are_refused():
    with pytest.raises(UnsupportedSchemaError,
                       match="dependencies at /dependencies: dependencies: not a keyword"):
        lower_json_schema({"dependencies": {"a": ["b"]}})


def test_a_resource_declaring_a_draft_without_the_keyword_ignores_it():
    draft7 = {"$id": "http://example.com/d7.json", "$schema": "http://json-schema.org/draft-07/schema#",
              "dependentRequired": {"foo": ["bar"]}}
    registry = {"http://example.com/d7.json": draft7}
    schema = {"allOf": [{"$ref": "http://example.com/d7.json"}], "properties": {"foo": True}}
    grammar = compile_json_schema(schema, byte_vocab(), registry=registry)
    assert matcher_accepts(grammar, {"foo": 1})
