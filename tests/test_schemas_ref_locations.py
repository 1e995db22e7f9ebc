"""The location `RefIndex.resolve` gives a `$ref` target: read off a root-document JSON pointer
(`_root_pointer_location`) it must equal the one found by indexing every object of the root
(`location_of`), for any spelling of the pointer; other refs fall back to the index."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas.drafts import DRAFT_2020_12_SPEC
from formwork.schemas.pointer import child, to_fragment
from formwork.schemas.refs import Location, RefIndex

KEYS = st.text(alphabet="ab~/% 0é#", min_size=0, max_size=4)
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
DOCUMENTS = st.recursive(
    st.dictionaries(KEYS, LEAVES, max_size=3),
    lambda inner: st.one_of(st.dictionaries(KEYS, inner, max_size=4), st.lists(inner, max_size=3)),
    max_leaves=25).map(lambda doc: doc if isinstance(doc, dict) else {"x": doc})


def _objects(document: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every JSON object of `document` with its pointer."""
    found, stack = [], [("", document)]
    while stack:
        pointer, node = stack.pop()
        if isinstance(node, dict):
            found.append((pointer, node))
            stack.extend((child(pointer, key), value) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((child(pointer, index), value) for index, value in enumerate(node))
    return found


@settings(max_examples=150, deadline=None)
@given(DOCUMENTS)
def test_pointer_refs_locate_like_the_index(document: dict[str, Any]) -> None:
    index = RefIndex(document, DRAFT_2020_12_SPEC)
    for pointer, node in _objects(document):
        if not pointer:
            continue  # "#" is not a pointer of the shortcut: the index answers it
        ref = "#" + to_fragment(pointer)
        assert index._root_pointer_location(ref, node) == Location("", pointer)
        contents, _, location = index.resolve(ref)
        assert contents is node
        assert location == index.location_of(node) == Location("", pointer)


def test_other_spellings_fall_back_to_the_index() -> None:
    inner = {"type": "integer"}
    document = {"allOf": [{"type": "null"}, inner],
                "properties": {"a": {"$id": "https://example.com/a", "$defs": {"b": {"type": "string"}}}}}
    index = RefIndex(document, DRAFT_2020_12_SPEC)
    # an index spelled with a leading zero is not the canonical pointer
    assert index._root_pointer_location("#/allOf/01", inner) is None
    assert index._root_pointer_location("#/allOf/1", inner) == Location("", "/allOf/1")
    # a pointer relative to an embedded resource leads elsewhere from the root
    embedded = document["properties"]["a"]["$defs"]["b"]
    assert index._root_pointer_location("#/$defs/b", embedded) is None
    resolver = index.enter(document["properties"]["a"], None, DRAFT_2020_12_SPEC.specification)
    contents, _, location = index.resolve("#/$defs/b", resolver)
    assert contents is embedded and location == Location("", "/properties/a/$defs/b")
    # pointers to nowhere, past a scalar, and anchors
    assert index._root_pointer_location("#/$defs/missing", inner) is None
    assert index._root_pointer_location("#/allOf/1/type/x", inner) is None
    assert index._root_pointer_location("#/allOf/~2", inner) is None
    assert index._root_pointer_location("#anchor", inner) is None
