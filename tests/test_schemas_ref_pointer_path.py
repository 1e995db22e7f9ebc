"""`RefIndex` resolves a JSON-pointer `$ref` through objects without identifiers by walking the
document itself (`refs._plain_pointer_lookup`) instead of `referencing`'s lookup: the contents,
the resolver handed on (base URI, registry, dynamic scope) and the location must be what the
lookup gives, for every pointer into documents holding `$id`/`id` keys, escaped tokens, arrays and
booleans, under each draft's identifier rules."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import given, settings, strategies as st

from formwork.schemas import refs
from formwork.schemas.drafts import DRAFT_04_SPEC, DRAFT_07_SPEC, DRAFT_2020_12_SPEC
from formwork.schemas.refs import RefIndex

KEYS = ["a", "b", "$defs", "definitions", "properties", "items", "allOf", "$id", "id", "$ref",
        "x~y", "x/y", "p%q", "é"]
IDS = st.sampled_from(["https://example.com/other.json", "inner.json", "#frag"])

schemas = st.recursive(
    st.booleans() | st.integers(0, 3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(KEYS), inner | IDS, max_size=4),
    max_leaves=25)
#: schema-like documents: subschemas under the keywords that hold them, where an identifier enters
#: a subresource, and anywhere else
documents = st.dictionaries(
    st.sampled_from(["$defs", "definitions", "properties", "items", "allOf", "a"]),
    st.dictionaries(st.sampled_from(["a", "b", "x~y", "0"]), schemas, max_size=3) | schemas, max_size=3)


def _paths(node: Any, at: tuple = ()) -> list[tuple]:
    """Every path of tokens into `node`."""
    out = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*at, str(index)))
    return out


def _ref(tokens: tuple, percent: bool) -> str:
    pointer = "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)
    return "#" + (quote(pointer, safe="/~") if percent else pointer)


def _answer(index: RefIndex, ref: str) -> Any:
    """What `RefIndex._resolve` gives, comparable across indexes (or the refusal's type)."""
    try:
        contents, resolver, location = index._resolve(ref, index.resolver, None)
    except Exception as error:  # noqa: BLE001 - a refusal is part of the answer compared
        return type(error).__name__
    return (contents, resolver._base_uri, tuple(resolver._previous), location)


@settings(max_examples=300, deadline=None)
@given(documents, st.data(),
       st.sampled_from([DRAFT_2020_12_SPEC, DRAFT_07_SPEC, DRAFT_04_SPEC]))
def test_pointer_walk_matches_the_lookup(document: dict, data: st.DataObject, draft: Any) -> None:
    document.pop("$id", None)  # the root keeps the empty base URI (a nested one may set another)
    document.pop("id", None)
    tokens = data.draw(st.sampled_from(_paths(document)) | st.lists(st.sampled_from(KEYS), max_size=3).map(tuple))
    ref = _ref(tokens, data.draw(st.booleans()))
    walked = _answer(RefIndex(document, draft), ref)
    original = refs._plain_pointer_lookup
    refs._plain_pointer_lookup = lambda resolver, ref: None
    try:
        looked_up = _answer(RefIndex(document, draft), ref)
    finally:
        refs._plain_pointer_lookup = original
    if isinstance(walked, tuple) and isinstance(looked_up, tuple):
        assert walked[0] is looked_up[0]  # the same object of the document
        assert walked[1:] == looked_up[1:]
    else:
        assert walked == looked_up


@pytest.mark.parametrize("ref", ["#/$defs/a", "#/$defs/a/properties/b", "#/$defs/x~1y", "#/$defs/p%25q"])
def test_plain_pointers_skip_the_lookup(ref: str) -> None:
    """Pointers through objects without identifiers are walked here (the lookup is never asked),
    with the answer it gives."""
    document = {"$defs": {"a": {"properties": {"b": {"type": "string"}}}, "x/y": {}, "p%q": {}}}
    index = RefIndex(document, DRAFT_2020_12_SPEC)
    assert refs._plain_pointer_lookup(index.resolver, ref) is not None
    expected = index.resolver.lookup(ref)
    contents, resolver, _ = index._resolve(ref, index.resolver, None)
    assert contents is expected.contents
    assert resolver._base_uri == expected.resolver._base_uri
    assert tuple(resolver._previous) == tuple(expected.resolver._previous)


@pytest.mark.parametrize("step", [{"$id": "https://example.com/inner.json"}, {"id": "inner.json"}])
def test_identifiers_on_the_path_go_to_the_lookup(step: dict) -> None:
    """An object with `$id` or `id` on the path may enter a subresource: looked up as before."""
    document = {"$defs": {"a": {**step, "properties": {"b": {}}}}}
    index = RefIndex(document, DRAFT_2020_12_SPEC)
    assert refs._plain_pointer_lookup(index.resolver, "#/$defs/a/properties/b") is None
    assert refs._plain_pointer_lookup(index.resolver, "#/$defs/a") is None
