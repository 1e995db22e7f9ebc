"""`uniqueItems` over unbounded items inside recursive schemas (`unique_islands`): random tree
schemas whose unique arrays are regular islands of the context-free grammar; the matcher accepts
exactly what jsonschema accepts, duplicates at several depths included; an array whose items
recurse is refused naming its pointer."""
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact  # noqa: E402

from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema  # noqa: E402

ITEMS = st.sampled_from([
    {"type": "string"}, {"type": "integer"}, {"type": ["string", "integer"]},
    {"type": "string", "maxLength": 2}, {"type": "array", "items": {"type": "integer"}},
    {"type": "object", "properties": {"k": {"type": "integer"}}, "additionalProperties": False},
])
POOL = ["a", "b", "", 1, 2, 1.0, [1], [1, 2], [], {"k": 1}, {"k": 2}, {}]
TAG_VALUES = st.sampled_from(POOL)


@st.composite
def tree_schemas(draw):
    """A tree node: `tags` (unique, regular items), `children` (recursive), maybe `labels` (a
    second unique array), reached through `#` or through `$defs`."""
    tags = {"type": "array", "items": draw(ITEMS), "uniqueItems": True}
    if draw(st.booleans()):
        tags["minItems"] = draw(st.integers(0, 2))
    if draw(st.booleans()):  # never below minItems: the node must have instances
        tags["maxItems"] = draw(st.integers(tags.get("minItems", 0), 3))
    via_defs = draw(st.booleans())
    node = {"type": "object", "properties": {
        "tags": tags,
        "children": {"type": "array", "items": {"$ref": "#/$defs/node" if via_defs else "#"}},
    }, "additionalProperties": False}
    if draw(st.booleans()):
        node["properties"]["labels"] = {"type": "array", "items": {"type": "string"},
                                        "uniqueItems": True}
    if draw(st.booleans()):
        node["required"] = ["tags"]
    return {"$defs": {"node": node}, "$ref": "#/$defs/node"} if via_defs else node


@st.composite
def trees(draw, values=TAG_VALUES, depth=3):
    """An instance shaped like a tree node, with tags drawn from a small pool (duplicates)."""
    out = {}
    if draw(st.integers(0, 3)):
        out["tags"] = draw(st.lists(values, max_size=4))
    if depth and draw(st.booleans()):
        out["children"] = draw(st.lists(trees(values, depth - 1), max_size=2))
    if draw(st.integers(0, 3)) == 0:
        out["labels"] = draw(st.lists(st.sampled_from(["x", "y"]), max_size=3))
    return out


def with_duplicate(tree):
    """`tree` with the first tag of its deepest tagged node repeated (invalid if unique)."""
    deepest = None
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.get("tags"):
            deepest = node
        stack.extend(node.get("children", []))
    if deepest is None:
        return None
    dup = json.loads(json.dumps(tree))
    # the same walk on the copy finds the same node
    stack = [dup]
    while stack:
        node = stack.pop()
        if node.get("tags"):
            target = node
        stack.extend(node.get("children", []))
    target["tags"] = target["tags"] + target["tags"][:1]
    return dup


_SETTINGS = settings(max_examples=40, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _item_schema(schema):
    node = schema["$defs"]["node"] if "$defs" in schema else schema
    return node["properties"]["tags"]["items"]


@_SETTINGS
@given(tree_schemas(), st.data())
def test_unique_arrays_in_recursive_schemas_are_exact(schema, data):
    # half the trees with tags of the item type only (a duplicate is then what makes one invalid)
    fitting = [v for v in POOL if jsonschema.Draft202012Validator(_item_schema(schema)).is_valid(v)]
    tree = st.one_of(trees(st.sampled_from(fitting)), trees()) if fitting else trees()
    instances = data.draw(st.lists(tree, min_size=6, max_size=6))
    dups = [d for d in map(with_duplicate, instances) if d is not None]
    assert_exact(schema, instances + dups + [[], "x", {"children": [{"tags": "a"}]}])


def test_duplicates_at_several_depths():
    tree = {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "children": {"type": "array", "items": {"$ref": "#"}}}, "additionalProperties": False}
    assert_exact(tree, [
        {"tags": ["a", "b"]}, {"tags": ["a", "a"]},
        {"tags": ["a"], "children": [{"tags": ["a"]}]},  # equal items in different arrays
        {"children": [{"tags": ["x", "y"]}, {"children": [{"tags": ["q", "q"]}]}]},
        {"children": [{"children": [{"children": [{"tags": ["", "\u00e9", "\\u00e9"]}]}]}]},
        {"children": [{"children": [{"children": [{"tags": ["\u00e9", "\u00e9"]}]}]}]},
    ])


def test_matcher_masks_the_duplicate_deep_inside():
    tree = {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "children": {"type": "array", "items": {"$ref": "#"}}}, "additionalProperties": False}
    grammar = compile_json_schema(tree, byte_vocab())
    m = grammar.matcher()
    assert m.accept_string('{"children":[{"children":[{"tags":[12,3,')
    assert _allowed(m, "1") and m.accept_string("12")  # 12 may still become 120
    assert not _allowed(m, "]") and not _allowed(m, ",")  # 12 again: masked and refused
    assert not m.accept_string("]") and not m.accept_string(",")
    assert _allowed(m, "0") and m.accept_string("0],")
    assert m.accept_string('"children":[]}]}]}') and m.can_terminate()


def _allowed(matcher, char: str) -> bool:
    """Whether the byte vocabulary's token for `char` (its byte's value) is in the matcher's mask."""
    token = ord(char)
    return bool(int(matcher.next_token_mask()[token >> 5]) >> (token & 31) & 1)


def test_recursive_items_are_refused_naming_the_array():
    schema = {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#"}, "uniqueItems": True}}}
    with pytest.raises(UnsupportedSchemaError) as info:
        compile_json_schema(schema, byte_vocab())
    assert "/properties/children/uniqueItems" in str(info.value)
    assert "recursive" in str(info.value)
