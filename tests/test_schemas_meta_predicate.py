"""The compiled meta-schema predicates (`schemas/meta_predicate.py`): True only for schemas the
official meta-schema accepts, True for the valid schemas of the JSON Schema Test Suite, and
refusing meta-schemas outside the compiled subset."""
from __future__ import annotations

import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings

from formwork.schemas.drafts import DRAFT_04_SPEC, DRAFT_06_SPEC, DRAFT_07_SPEC, DRAFT_2020_12_SPEC
from formwork.schemas.keywords import DRAFT_KEYWORDS
from formwork.schemas.meta_predicate import UnsupportedMetaSchemaError, compile_meta_schema
from formwork.schemas.metaschema import _predicate
from formwork.schemas.walk import subschemas

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import schema_like, suite_groups  # noqa: E402

DRAFTS = {"2020-12": DRAFT_2020_12_SPEC, "draft-07": DRAFT_07_SPEC, "draft-06": DRAFT_06_SPEC,
          "draft-04": DRAFT_04_SPEC}
WALK_AS = {"draft-06": "draft-07", "draft-04": "draft-07"}  # their subschemas sit where draft-07's do


def _official(draft):
    validator = draft.validator
    formats = [f for f in validator.FORMAT_CHECKER.checkers if f != "regex"]
    return validator(validator.META_SCHEMA, format_checker=jsonschema.FormatChecker(formats))


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_predicate_agrees_with_the_official_meta_schema_on_suite_schemas(name):
    draft = DRAFTS[name]
    predicate, official = _predicate(draft), _official(draft)
    assert predicate is not None
    checked = valid = fast = 0
    for _file, group in suite_groups(name):
        stack = [group["schema"]]
        while stack:
            schema = stack.pop()
            ok, said = official.is_valid(schema), predicate(schema)
            assert ok or not said, schema  # never a false "valid"
            valid += ok
            fast += said
            stack.extend(sub.schema for sub in subschemas(schema, WALK_AS.get(name, name)))
            checked += 1
    assert checked > 400
    # every valid suite schema takes the fast path; draft-04/06 leave enums and uniqueItems
    # arrays holding objects or arrays to jsonschema (their meta-schemas ask for uniqueItems)
    assert fast == valid if name not in WALK_AS else fast >= 0.97 * valid


schema_like_values = schema_like(
    ["", "a", "string", "object", "array", "#", "#/$defs/x", "uuid", "^a+$", "(", "http://x/", "not a uri"],
    sorted(DRAFT_KEYWORDS["2020-12"] | DRAFT_KEYWORDS["draft-07"] | {"id", "definitions", "dependencies"})
    + ["x-unknown"])


@settings(deadline=None, max_examples=200)
@given(schema_like_values)
def test_predicate_is_never_wrongly_true(schema):
    for draft in DRAFTS.values():
        if _predicate(draft)(schema):
            assert _official(draft).is_valid(schema), schema


def test_examples_of_valid_and_invalid_schemas():
    predicate = _predicate(DRAFT_2020_12_SPEC)
    assert predicate({"type": ["string", "null"], "required": ["a", "b"]})
    assert not predicate({"required": ["a", "a"]})  # invalid
    assert not predicate({"$id": "#frag"})  # 2020-12 forbids non-empty fragments in $id
    assert not predicate({"minLength": -1}) and not predicate({"multipleOf": 0})
    assert predicate({"minLength": 2.0})  # an integral float is an integer


def test_draft_04_examples():
    predicate = _predicate(DRAFT_04_SPEC)
    assert predicate({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0,
                                                             "exclusiveMinimum": True}}})
    assert not predicate({"exclusiveMinimum": True})  # dependencies: needs minimum
    assert not predicate({"multipleOf": 0})  # minimum 0 made exclusive by the boolean
    assert predicate({"multipleOf": 0.5}) and predicate({"id": "http://x/y#", "required": ["a"]})
    assert not predicate({"required": []})  # draft-04: minItems 1


@pytest.mark.parametrize("meta", [
    {"patternProperties": {"^x": True}},
    {"$dynamicRef": "#meta"},
    {"not": {"type": "string"}},
    {"enum": [1, 2]},
    {"items": [{"type": "string"}]},
    {"$ref": "#/properties/a"},
])
def test_meta_schemas_outside_the_subset_are_refused(meta):
    with pytest.raises(UnsupportedMetaSchemaError):
        compile_meta_schema(meta, jsonschema.Draft202012Validator, jsonschema.FormatChecker())


def test_draft_07_ref_siblings_are_refused():
    with pytest.raises(UnsupportedMetaSchemaError):
        compile_meta_schema({"$ref": "#", "type": "object"}, jsonschema.Draft7Validator,
                            jsonschema.FormatChecker(), draft07=True)
