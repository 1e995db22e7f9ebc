"""The normalised form the grammar compiler consumes: each rule, its invariants, and equivalence
with the original schema on every instance of the JSON Schema Test Suite."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import referencing.jsonschema
from referencing import Registry, Resource

from formwork.schemas import json_equal, load_schema
from formwork.schemas.keywords import DRAFT_07, DRAFT_2020_12
from formwork.schemas.normalize import DEFS_PREFIX
from formwork.schemas.walk import subschemas

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import loaded_suite, remote_documents  # noqa: E402

D7 = "http://json-schema.org/draft-07/schema#"


def norm(schema, **kwargs):
    return load_schema(schema, **kwargs).normalized()


def test_draft07_tuple_items_become_prefix_items():
    n = norm({"$schema": D7, "items": [{"type": "string"}, True], "additionalItems": False})
    assert n.root == {"prefixItems": [{"type": ["string"]}, True], "items": False}
    assert norm({"$schema": D7, "items": {"type": "null"}, "additionalItems": False}).root == {
        "items": {"type": ["null"]}}


def test_draft07_ref_siblings_are_dropped_and_2020_12_ones_become_all_of():
    n7 = norm({"$schema": D7, "definitions": {"s": {"type": "string"}},
               "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 2}}})
    assert n7.root == {"properties": {"a": {"$ref": "#/$defs/s"}}}
    n = norm({"$defs": {"s": {"type": "string"}},
              "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 2, "allOf": [{"minLength": 1}]}}})
    assert n.root["properties"]["a"] == {"maxLength": 2, "allOf": [{"$ref": "#/$defs/s"},
                                                                  {"minLength": 1}]}


def test_reference_targets_become_named_definitions():
    n = norm({
        "$id": "https://example.com/root.json",
        "$defs": {"a": {"type": "string"}, "item": {"$id": "item.json", "type": "integer"}},
        "definitions": {"a": {"type": "null"}},
        "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"$ref": "#/definitions/a"},
                       "z": {"$ref": "item.json"}, "w": {"$ref": "#/properties/x"},
                       "r": {"$ref": "defs.json#/$defs/id"}},
    }, registry={"https://example.com/defs.json": {"$defs": {"id": {"format": "uuid"}}}})
    refs = {name: sub["$ref"] for name, sub in n.root["properties"].items()}
    assert refs == {"x": "#/$defs/a", "y": "#/$defs/a_2", "z": "#/$defs/item",
                    "w": "#/$defs/properties.x", "r": "#/$defs/defs.id"}
    assert n.target(refs["x"]) == {"type": ["string"]}
    assert n.target(refs["y"]) == {"type": ["null"]}
    assert n.target(refs["z"]) == {"type": ["integer"]}
    assert n.target(refs["w"]) == {"$ref": "#/$defs/a"}
    assert n.target(refs["r"]) == {"format": "uuid"}
    with pytest.raises(KeyError):
        n.target("#/$defs/missing")


def test_boolean_targets_are_inlined_and_a_referenced_root_is_a_definition():
    n = norm({"$defs": {"never": False}, "properties": {"a": {"$ref": "#/$defs/never"}}})
    assert n.root == {"properties": {"a": False}} and n.definitions == {}
    tree = norm({"type": "array", "items": {"$ref": "#"}})
    assert tree.root == {"$ref": "#/$defs/root"}
    assert tree.definitions == {"root": {"type": ["array"], "items": {"$ref": "#/$defs/root"}}}
    assert tree.as_schema()["$defs"]["root"]["items"] == {"$ref": "#/$defs/root"}


@pytest.mark.parametrize("schema, expected", [
    ({"type": "string"}, {"type": ["string"]}),
    ({"type": ["string", "integer", "null", "number"]}, {"type": ["null", "number", "string"]}),
    ({"enum": [1, 1.0, True, "a", "a", [1], [1.0]]}, {"enum": [1, True, "a", [1]]}),
    ({"enum": ["only"]}, {"const": "only"}),
    ({"enum": [1, 2], "const": 2.0}, {"const": 2.0}),
    ({"enum": [1, 2], "const": 3}, False),
    ({"title": "t", "description": "d", "$comment": "c", "examples": [1], "default": 0,
      "x-extra": 1, "$anchor": "a", "minLength": 2}, {"minLength": 2}),
    ({"$schema": D7, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
     {"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}}),
    (True, True),
    ({}, {}),
])
def test_value_rules(schema, expected):
    assert norm(schema).root == expected


# ---- invariants and equivalence over the suite -------------------------------------------------

def _schema_objects(schema):
    """Every schema object below (and including) a normalised schema."""
    if isinstance(schema, dict):
        yield schema
        for sub in subschemas(schema, DRAFT_2020_12):
            yield from _schema_objects(sub.schema)


def _usable(doc):
    """Documents whose normal form can be compared: every reference resolved (no dynamic
    $dynamicRef, no document of the other draft family), regexes Python accepts (jsonschema
    evaluates patterns with `re`, which lacks the `\\p{..}` escapes the compiler supports)."""
    return not isinstance(doc, Exception) and not any(
        p.keyword in ("$dynamicRef", "pattern", "patternProperties")
        or (p.keyword == "$ref" and p.severity.value == "error") for p in doc.unsupported()
    ) and _python_regexes(doc.schema)


def _python_regexes(schema) -> bool:
    """Whether every `pattern` and `patternProperties` key in `schema` compiles with Python's `re`."""
    if isinstance(schema, list):
        return all(_python_regexes(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    patterns = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
    if isinstance(schema.get("patternProperties"), dict):
        patterns += list(schema["patternProperties"])
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error:
            return False
    return all(_python_regexes(value) for value in schema.values())


@pytest.mark.parametrize("draft", [DRAFT_2020_12, DRAFT_07])
def test_normal_forms_of_suite_schemas_are_self_contained_2020_12_schemas(draft):
    for name, _group, doc in loaded_suite(draft):
        if not _usable(doc):
            continue
        n = doc.normalized()
        document = n.as_schema()
        again = load_schema(document)  # valid 2020-12, no registry needed
        assert again.draft.name == DRAFT_2020_12
        for root in [n.root, *n.definitions.values()]:
            for node in _schema_objects(root):
                assert not {"definitions", "$defs", "$id", "$anchor", "$schema"} & set(node), name
                assert not isinstance(node.get("items"), list), name
                assert isinstance(node.get("type", []), list), name
                if "$ref" in node:
                    assert set(node) == {"$ref"} and node["$ref"].startswith(DEFS_PREFIX), name
                    n.target(node["$ref"])


def _validator(draft):
    if draft == DRAFT_2020_12:
        cls, spec = jsonschema.Draft202012Validator, referencing.jsonschema.DRAFT202012
    else:
        cls, spec = jsonschema.Draft7Validator, referencing.jsonschema.DRAFT7
    registry = Registry().with_resources(
        (uri, Resource.from_contents(doc, default_specification=spec))
        for uri, doc in remote_documents().items())
    return cls, registry


@pytest.mark.parametrize("draft", [DRAFT_2020_12, DRAFT_07])
def test_normal_forms_accept_exactly_the_instances_the_original_accepts(draft):
    cls, registry = _validator(draft)
    compared = 0
    for name, group, doc in loaded_suite(draft):
        if not _usable(doc):
            continue
        original = cls(group["schema"], registry=registry)
        normal = jsonschema.Draft202012Validator(doc.normalized().as_schema())
        for test in group["tests"]:
            assert original.is_valid(test["data"]) == normal.is_valid(test["data"]), (
                name, group["description"], test["description"])
            compared += 1
    assert compared > 1000


# ---- JSON equality -----------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3),
    max_leaves=10)


def _floats(value):
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    return {k: _floats(v) for k, v in value.items()}


@settings(deadline=None, max_examples=80)
@given(json_values, json_values)
def test_json_equality_treats_ints_and_floats_alike_but_not_booleans(a, b):
    assert json_equal(a, _floats(a))
    assert json_equal(a, b) == json_equal(_floats(a), _floats(b))
    assert json_equal(a, b) == (json.dumps(_floats(a), sort_keys=True)
                                == json.dumps(_floats(b), sort_keys=True))
    assert not json_equal(True, 1) and not json_equal(0, False)


# ---- random schemas: the normal form validates like the original -------------------------------

TYPES = ["null", "boolean", "object", "array", "number", "integer", "string"]
small_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.5, 1.0, "a", "b"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner,
                                                                max_size=2),
    max_leaves=6)


@st.composite
def random_schemas(draw, draft, depth=2, refs=True):
    """Small schemas over the keywords normalisation rewrites, in `draft`'s spelling; `refs`:
    whether they may contain `$ref: #/definitions/d` (not inside `d` itself: no cycles)."""
    leaves = [True, False, {}] + ([{"$ref": "#/definitions/d"}] if refs else [])
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(leaves))
    schema = {}
    if draw(st.booleans()):
        schema["type"] = draw(st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1,
                                                               max_size=3, unique=True))
    if draw(st.booleans()):
        schema["enum"] = draw(st.lists(small_json, min_size=1, max_size=3))
    if draw(st.integers(0, 3)) == 0:
        schema["const"] = draw(small_json)
    sub = random_schemas(draft, depth - 1, refs)
    if draw(st.booleans()):
        if draft == DRAFT_07 and draw(st.booleans()):
            schema["items"] = draw(st.lists(sub, min_size=1, max_size=2))
            if draw(st.booleans()):
                schema["additionalItems"] = draw(sub)
        else:
            schema["items"] = draw(sub)
            if draft == DRAFT_2020_12 and draw(st.booleans()):
                schema["prefixItems"] = draw(st.lists(sub, min_size=1, max_size=2))
    if draw(st.booleans()):
        schema["properties"] = draw(st.dictionaries(st.sampled_from("ab"), sub, max_size=2))
        schema["required"] = draw(st.lists(st.sampled_from("ab"), unique=True, max_size=2))
    if draw(st.integers(0, 2)) == 0:
        schema[draw(st.sampled_from(["allOf", "anyOf", "oneOf"]))] = draw(
            st.lists(sub, min_size=1, max_size=2))
    if refs and draw(st.integers(0, 3)) == 0:
        schema["$ref"] = "#/definitions/d"
    return schema


@pytest.mark.parametrize("draft", [DRAFT_2020_12, DRAFT_07])
def test_random_schemas_normalise_to_equivalent_schemas(draft):
    cls = jsonschema.Draft202012Validator if draft == DRAFT_2020_12 else jsonschema.Draft7Validator

    @settings(deadline=None, max_examples=40)
    @given(random_schemas(draft), random_schemas(draft, depth=1, refs=False),
           st.lists(small_json, min_size=1, max_size=8))
    def check(body, definition, instances):
        schema = body if isinstance(body, bool) else {**body, "definitions": {"d": definition}}
        normal = jsonschema.Draft202012Validator(load_schema(schema, draft=draft).normalized()
                                                 .as_schema())
        original = cls(schema)
        for instance in instances:
            assert original.is_valid(instance) == normal.is_valid(instance), instance

    check()
