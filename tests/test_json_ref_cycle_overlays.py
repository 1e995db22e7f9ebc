"""Recursive schemas that overlay a recursive base (issue 21: AsyncAPI's Schema object is
``allOf: [draft-07 meta-schema, its own properties]``, each side referring back to itself) and
``oneOf`` branches kept apart by a required member (OpenAPI 3.0: ``oneOf: [Schema, Reference]``).

* Overlay: a member's value conjoins the base's subschema for it with the overlay's, which expands
  to the base again, so the conjunction holds the base twice; each level added one more copy, the
  conjunction never repeated exactly and lowering stopped at 64 nested combinations.  A conjunction
  now holds each subschema once (A and A is A), so the cycle closes at the second level.
* ``oneOf``: a branch that requires a member the other forbids (additionalProperties false) is
  disjoint from it whatever the members' values; the overlap was lowered, reached a recursive
  rule, was taken as non-empty, and the complement it asked for was refused.
"""
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4, DRAFT7

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact, matcher_accepts  # noqa: E402

from formwork.grammar.errors import EmptyLanguageError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.errors import UnsupportedSchemaError  # noqa: E402

DATA = Path(__file__).parent / "data" / "npm" / "ref_overlays"
ASYNCAPI = {name: json.loads((DATA / f"{name}.json").read_text()) for name in (
    "schema", "Reference", "ReferenceObject", "externalDocs", "specificationExtension")}
ASYNCAPI_REGISTRY = {doc["$id"]: doc for doc in ASYNCAPI.values()}
HTTP_OPERATION = json.loads((DATA / "http-operation-0.3.0.json").read_text())
OPENAPI_3 = json.loads((DATA / "openapi-3.0.json").read_text())

LEAVES = st.none() | st.booleans() | st.integers(-1, 2) | st.sampled_from(["", "x", "y"])


def _instances(keys: list[str]):
    return st.recursive(LEAVES, lambda inner: st.dictionaries(st.sampled_from(keys), inner, max_size=3)
                        | st.lists(inner, max_size=3), max_leaves=10)


# ---------------------------------------------------------------------- overlays
LEAF_SCHEMAS = st.sampled_from([{"type": "integer"}, {"type": "string"}, {"type": ["string", "null"]},
                                {"enum": [0, "x", None]}, {"minimum": 0}, {}])


@st.composite
def overlay_schemas(draw) -> dict:
    """`#/definitions/S` = allOf [base B, overlay O]: B's members refer to B, O's to S, through
    $ref, anyOf (a schema or an array of them) or additionalProperties."""
    def members(target: str) -> dict:
        ref = {"$ref": f"#/definitions/{target}"}
        return {"a": ref, "items": {"anyOf": [ref, {"type": "array", "items": ref}]},
                "n": draw(LEAF_SCHEMAS)}
    base = {"type": draw(st.sampled_from(["object", ["object", "boolean"]])), "properties": members("B")}
    overlay = {"properties": members("S")}
    if draw(st.booleans()):
        overlay["additionalProperties"] = {"$ref": "#/definitions/S"}
    if draw(st.booleans()):
        overlay["required"] = ["n"]
    return {"definitions": {"B": base, "S": {"allOf": [{"$ref": "#/definitions/B"}, overlay]}},
            "$ref": "#/definitions/S"}


@settings(max_examples=30, deadline=None)
@given(schema=overlay_schemas(), instances=st.lists(_instances(["a", "items", "n", "z"]), min_size=1,
                                                    max_size=6))
def test_a_base_overlaid_with_its_own_recursion_is_exact(schema, instances):
    try:
        assert_exact(schema, instances, draft="draft-07")
    except EmptyLanguageError:
        # e.g. a required `n` that must be an integer and a string: no document is valid, and an
        # instance jsonschema accepts would prove the refusal wrong
        validator = jsonschema.Draft7Validator(schema)
        assert not any(validator.is_valid(instance) for instance in instances)
        assert not validator.is_valid({"n": 0}) and not validator.is_valid({"n": "x"})


def test_the_overlay_cycle_closes_on_deep_instances():
    """Nesting deeper than 64 levels: the cycle is a grammar rule, not an unrolled nest."""
    schema = {"definitions": {
        "B": {"type": "object", "properties": {"a": {"$ref": "#/definitions/B"}, "n": {"type": "integer"}}},
        "S": {"allOf": [{"$ref": "#/definitions/B"},
                        {"properties": {"a": {"$ref": "#/definitions/S"}, "m": {"type": "string"}}}]}},
        "$ref": "#/definitions/S"}
    deep: dict = {"n": 1, "m": "x"}
    for _ in range(80):
        deep = {"a": deep}
    bad: dict = {"m": 1}  # a non-string m at the bottom
    for _ in range(80):
        bad = {"a": bad}
    assert_exact(schema, [deep, bad, {"a": {"n": "1"}}, {"a": {"m": "y", "a": {}}}], draft="draft-07")


def _asyncapi_validator(schema: dict) -> jsonschema.Draft7Validator:
    registry = Registry().with_resources(
        (uri, Resource.from_contents(doc, DRAFT7)) for uri, doc in ASYNCAPI_REGISTRY.items())
    return jsonschema.Draft7Validator(schema, registry=registry,
                                      format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


ASYNCAPI_SCHEMAS = {
    True: [{"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}},
           {"items": [{"type": "string"}, {"items": {"type": "number"}}], "required": ["a"]},
           {"additionalProperties": {"not": {"type": "null"}}, "x-extra": {"any": [1]}},
           {"allOf": [True, {"type": ["string", "null"]}], "discriminator": "kind", "deprecated": True},
           {"externalDocs": {"url": "https://example.com/docs"}}, {"externalDocs": {"$ref": "#/x"}},
           True, False],
    False: [{"type": "objects"}, {"required": ["a", "a"]}, {"items": [{"type": 3}]},
            {"properties": {"p": {"minLength": -1}}}, {"deprecated": "yes"},
            {"externalDocs": {"description": "no url"}}, {"allOf": []}, 3],
}


def test_asyncapi_3_schema_object_compiles_and_is_exact():
    schema = ASYNCAPI["schema"]
    grammar = compile_json_schema(schema, byte_vocab(), registry=ASYNCAPI_REGISTRY)
    validator = _asyncapi_validator(schema)
    for expected, instances in ASYNCAPI_SCHEMAS.items():
        for instance in instances:
            assert validator.is_valid(instance) == expected, instance  # the cases are jsonschema's
            assert matcher_accepts(grammar, instance) == expected, instance


def test_asyncapi_http_operation_binding_compiles_and_is_exact():
    grammar = compile_json_schema(HTTP_OPERATION, byte_vocab(), registry=ASYNCAPI_REGISTRY)
    validator = _asyncapi_validator(HTTP_OPERATION)
    query = {"type": "object", "required": ["companyId"],
             "properties": {"companyId": {"type": "number", "minimum": 1}}}
    cases = {True: [{"method": "GET", "query": query, "bindingVersion": "0.3.0"}, {},
                    {"query": {"items": {"items": {"enum": [1]}}}}],
             False: [{"method": "FETCH"}, {"query": {"minimum": "1"}}, {"bindingVersion": "0.2.0"},
                     {"query": query, "other": 1}, {"query": {"items": {"items": {"type": "nope"}}}}]}
    for expected, instances in cases.items():
        for instance in instances:
            assert validator.is_valid(instance) == expected, instance
            assert matcher_accepts(grammar, instance) == expected, instance


# ---------------------------------------------------------------------- oneOf kept apart
def one_of_shape(forbid: str, declare: str, value: dict) -> dict:
    """OpenAPI's shape, small: S (the root) nests oneOf [S, R] in several members and has a unique
    array of strings; R requires member "r", declared by `declare` (properties or
    patternProperties) with schema `value`; S keeps "r" out with additionalProperties false and
    the patternProperties `forbid`, or ("false") with "r": false."""
    ref_s, ref_r = {"$ref": "#/definitions/S"}, {"$ref": "#/definitions/R"}
    either = {"oneOf": [ref_s, ref_r]}
    arrays = {"type": "array", "items": either}
    s: dict = {"type": "object", "properties": {
        "u": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
        "a1": arrays, "a2": arrays, "a3": arrays, "m": {"type": "object", "additionalProperties": either},
        "e": {"oneOf": [ref_s, ref_r, {"type": "boolean"}]}}}
    if forbid == "false":
        s["properties"]["r"] = False
    else:
        s["additionalProperties"] = False
        s["patternProperties"] = {forbid: {}}
    r = {"type": "object", "required": ["r"], declare: {"r": value}}
    return {"definitions": {"S": s, "R": r}, "$ref": "#/definitions/S"}


@st.composite
def disjoint_one_of_schemas(draw) -> dict:
    """`one_of_shape` where S forbids "r" (a pattern that misses it, or "r": false)."""
    return one_of_shape(draw(st.sampled_from(["^x-", "^z$", "q", "false"])),
                        draw(st.sampled_from(["properties", "patternProperties"])), draw(LEAF_SCHEMAS))


@settings(max_examples=30, deadline=None)
@given(schema=disjoint_one_of_schemas(),
       instances=st.lists(_instances(["r", "u", "a1", "m", "e", "x-a", "z"]), min_size=1, max_size=6))
def test_one_of_branches_apart_by_a_forbidden_required_member_are_exact(schema, instances):
    assert_exact(schema, instances, draft="draft-07")


def test_one_of_branches_sharing_objects_still_need_the_complement():
    """S lets "r" in through its patternProperties: the branches overlap on objects, and S's
    unique array has no complement, a typed refusal naming it."""
    schema = one_of_shape("^r", "properties", {"type": "string"})
    with pytest.raises(UnsupportedSchemaError, match="complement cannot be built exactly.*uniqueItems"):
        compile_json_schema(schema, byte_vocab(), draft="draft-07")


def test_openapi_3_schema_object_compiles_and_is_exact():
    """`#/definitions/Schema` of the OpenAPI 3.0 schema: its nested schemas are oneOf [Schema,
    Reference], Reference requires "$ref", which Schema forbids."""
    schema = {"definitions": OPENAPI_3["definitions"], "$ref": "#/definitions/Schema"}
    grammar = compile_json_schema(schema, byte_vocab(), draft="draft-04")
    validator = jsonschema.Draft4Validator(
        schema, registry=Registry().with_resource("", Resource.from_contents(schema, DRAFT4)),
        format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    cases = {True: [{"type": "object", "required": ["a"], "properties": {"a": {"$ref": "#/x"}}},
                    {"not": {"$ref": "#/components/schemas/A"}, "x-y": 1},
                    {"items": {"type": "array", "items": {"required": ["b", "c"]}}, "nullable": True},
                    {"allOf": [{"$ref": "#/a"}, {"oneOf": [{"type": "string"}]}]}],
             False: [{"required": ["a", "a"]}, {"required": []}, {"$ref": "#/a"},
                     {"not": {"$ref": 1, "type": "string"}}, {"items": {"required": ["b", "b"]}},
                     {"type": "null"}, {"properties": {"a": {"$ref": 1}}}]}
    for expected, instances in cases.items():
        for instance in instances:
            assert validator.is_valid(instance) == expected, instance
            assert matcher_accepts(grammar, instance) == expected, instance
