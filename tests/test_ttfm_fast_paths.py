"""The compile-time fast paths give the results of the general paths: the plain copy of a schema
dict (`schemas.source`) and the leaves lowered once per process (`json_schema.shared_leaves`)."""
from __future__ import annotations

import enum

import pytest

from formwork.grammar.json_schema import IndentSpec, lower_json_schema
from formwork.grammar.json_schema import shared_leaves
from formwork.schemas.errors import InvalidJSONError, SchemaTooDeepError
from formwork.schemas.source import _checked_copy, _checking_copy


class Colour(str, enum.Enum):
    RED = "red"


@pytest.mark.parametrize("value", [
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"enum": [1, 2.5, None, True]}}},
    [{"a": []}, [[1]], "x"],
    {"items": ({"type": "string"},)},           # a tuple: copied as a list
    {"const": Colour.RED},                      # a str subclass: kept as it is
    {"a": {"b": {"c": {}}}},
    {},
])
def test_plain_copy_matches_the_checking_copy(value):
    copy, depth = _checked_copy(value, 256)
    assert (copy, depth) == _checking_copy(value, 256)
    assert copy is not value


@pytest.mark.parametrize("value, error, pointer", [
    ({"a": {"b": float("inf")}}, InvalidJSONError, "/a/b"),
    ({"a": [1, {2: 3}]}, InvalidJSONError, "/a/1"),
    ({"a": {"b": {"c": {}}}}, SchemaTooDeepError, "/a/b"),
    ({"a": object()}, InvalidJSONError, "/a"),
])
def test_plain_copy_errors_name_the_pointer(value, error, pointer):
    with pytest.raises(error) as info:
        _checked_copy(value, 2 if error is SchemaTooDeepError else 256)
    assert info.value.pointer == pointer


def test_self_referencing_dict_is_too_deep():
    loop: dict = {}
    loop["a"] = loop
    with pytest.raises(SchemaTooDeepError):
        _checked_copy(loop, 256)


def _fresh(schema, **options):
    shared_leaves.SHARED_LEAVES.clear()
    return lower_json_schema(schema, **options)


@pytest.mark.parametrize("options", [{}, {"whitespace": IndentSpec(2)}, {"whitespace": "free"},
                                     {"draft": "draft-07"}, {"max_nesting_depth": 0}])
def test_shared_leaves_lower_as_fresh_ones(options):
    schemas = [{"const": 1}, {"const": 1.0}, {"const": True}, {"const": [1, {"a": 2}]},
               {"type": "integer", "minimum": 1, "description": "one"},
               {"type": "integer", "minimum": 1.5}, {"type": "object", "required": ["a"]},
               {"type": "array", "maxItems": 2}, {"type": "string", "format": "date"}]
    for schema in schemas:
        wrapped = {"type": "object", "properties": {"x": schema, "y": {"type": "array", "items": schema}}}
        expected = _fresh(wrapped, **options).node
        assert lower_json_schema(wrapped, **options).node == expected  # from the shared leaves
    assert _fresh({"const": 1}).node != _fresh({"const": True}).node


def test_a_leaf_that_warns_warns_every_time():
    schema = {"type": "object", "properties": {"d": {"type": "string", "format": "no-such-format"}}}
    shared_leaves.SHARED_LEAVES.clear()
    first = lower_json_schema(schema, lenient=True).warnings
    assert first and lower_json_schema(schema, lenient=True).warnings == first
