"""Keys no JSON Schema draft defines (webpack's ``instanceof``/``tsType``, VS Code's
``markdownDescription``, OpenAPI's ``x-`` extensions) change no schema's language: JSON Schema
ignores them, and the lowering treats them as annotations (`expand.constrains`), so a subschema of
them only is any value and a leaf beside them is the shared leaf without them."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import NEGATABLE, assert_agrees  # noqa: E402

from formwork.grammar.json_schema import lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.expand import (  # noqa: E402
    CONSTRAINING_KEYWORDS, NEUTRAL_KEYWORDS, Sub, constrains)
from formwork.grammar.json_schema.shared_leaves import shared_leaf_key  # noqa: E402
from formwork.schemas.keywords import SUPPORTED_KEYWORDS, UNSUPPORTED_KEYWORDS  # noqa: E402

IGNORED = {"instanceof": "Function", "tsType": "RegExp", "x-order": 3, "markdownDescription": "m",
           "added": "5.112.0", "errorMessage": {"type": "must be a string"}}


_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_ONE = ("not", "items", "additionalProperties", "contains", "propertyNames", "if", "then", "else")


def _sprinkled(schema: Any, draw: Any) -> Any:
    """`schema` with some ignored keys added to each of its schema objects (at random)."""
    if not isinstance(schema, dict):
        return schema
    out = {k: {n: _sprinkled(s, draw) for n, s in v.items()} if k in _MAPS else
           [_sprinkled(s, draw) for s in v] if k in _LISTS else
           _sprinkled(v, draw) if k in _ONE else v for k, v in schema.items()}
    for key in draw(st.lists(st.sampled_from(sorted(IGNORED)), max_size=2, unique=True)):
        out[key] = IGNORED[key]
    return out


def test_every_keyword_the_compiler_enforces_or_refuses_constrains() -> None:
    assert (SUPPORTED_KEYWORDS - NEUTRAL_KEYWORDS) <= CONSTRAINING_KEYWORDS
    assert set(UNSUPPORTED_KEYWORDS) <= CONSTRAINING_KEYWORDS
    assert all(constrains({k: 1}) for k in ("type", "additionalItems", "dependencies", "prefixItems",
                                              "unevaluatedProperties", "$formwork:witness", "$ref"))
    assert not any(constrains({k: v}) for k, v in IGNORED.items())
    assert not constrains({"description": "d", "$comment": "c", "tsType": "T"})


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_ignored_keys_leave_the_language_as_it_is(data: st.DataObject) -> None:
    schema = _sprinkled(data.draw(NEGATABLE), data.draw)
    assert_agrees(schema)
    assert_agrees({"properties": {"a": schema}, "anyOf": [schema, {"type": "integer"}]})


def test_a_branch_of_ignored_keys_is_the_empty_schema() -> None:
    glob = {"type": "object", "properties": {"glob": {"type": "string"}}, "required": ["glob"]}
    assert lower_json_schema({"properties": {"test": {"anyOf": [{"instanceof": "RegExp", "tsType": "R"}, glob]}}}
                             ).node == lower_json_schema({"properties": {"test": {"anyOf": [{}, glob]}}}).node


def test_a_leaf_beside_ignored_keys_is_the_shared_leaf() -> None:
    plain = {"type": "string", "minLength": 1}
    described = {**plain, "tsType": "string", "x-order": 2, "description": "d"}
    key = shared_leaf_key("ctx", 0, [Sub(plain, None, "")])
    assert key is not None and shared_leaf_key("ctx", 0, [Sub(described, None, "")]) == key
    assert shared_leaf_key("ctx", 0, [Sub({**plain, "items": {}}, None, "")]) is None


def test_a_subschema_of_annotations_and_ignored_keys_has_no_violation_to_build() -> None:
    # its complement is empty: `not` over it needs no schema of the names it rejects (refused before)
    for names in ({"description": "any name"}, {"markdownDescription": "m", "x-order": 1}):
        assert_agrees({"not": {"type": "object", "propertyNames": names}})
        assert_agrees({"not": {"type": "array", "prefixItems": [names, {"type": "string"}]}})


def test_a_ref_to_a_schema_of_ignored_keys_makes_the_any_of_any_value() -> None:
    # webpack's BannerPlugin: {"anyOf": [..., {"$ref": "#/definitions/BannerFunction"}]}, whose
    # target is {"instanceof": "Function", "tsType": ...}: the $ref site is expanded, so it counts
    # no more than the target
    from test_json_any_of_true_branch import alternatives

    schema = {"anyOf": [{"type": "object", "required": ["a"]}, {"$ref": "#/$defs/Fn"}],
              "$defs": {"Fn": {"instanceof": "Function", "tsType": "Fn"}}}
    [alternative] = alternatives(schema)
    assert [s.pointer for s in alternative] == [""]
    assert_agrees(schema)
