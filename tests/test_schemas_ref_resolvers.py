"""The resolvers `schemas.resolvers` makes are those `referencing` makes: the root's
(`resolver_with_root`, as `Registry.resolver_with_root`) and a lookup's (`evolved`, as
`Resolver._evolve`), field for field (attrs equality: base URI, registry, dynamic scope)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from referencing import Registry
from referencing.jsonschema import DRAFT202012

from formwork.schemas import refs, resolvers
from formwork.schemas.drafts import DRAFT_07_SPEC, DRAFT_2020_12_SPEC
from formwork.schemas.refs import RefIndex, SchemaRegistry

ROOTS = [
    {"type": "object"},
    {"$id": "https://example.com/root.json", "$defs": {"a": {}}},
    {"$id": "https://example.com/frag.json#"},
    {"$id": "relative.json"},
    {"$id": "https://example.com/r.json", "$ref": "#/$defs/a", "$defs": {"a": {}}},  # draft-07: no id
    {"$schema": "http://json-schema.org/draft-04/schema#", "id": "https://example.com/old.json"},
    True,
]


@pytest.mark.parametrize("draft", [DRAFT_2020_12_SPEC, DRAFT_07_SPEC], ids=lambda d: d.name)
@pytest.mark.parametrize("root", ROOTS, ids=repr)
@pytest.mark.parametrize("registry", [None, {"https://example.com/other.json": {"type": "string"}}])
def test_root_resolver_is_referencings(draft, root, registry):
    index = RefIndex(root, draft, SchemaRegistry(registry) if registry else None)
    expected = index._registry.registry.resolver_with_root(index._root_resource)
    assert index.resolver == expected
    assert index.resolver._base_uri == expected._base_uri
    assert index.resolver._registry == expected._registry


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["", "https://example.com/a.json", "urn:x"]),
       st.lists(st.sampled_from(["https://example.com/b.json", "urn:y"]), max_size=2))
def test_evolved_is_referencings_evolve(base_uri, previous):
    root = RefIndex({"$defs": {"a": {}}}, DRAFT_2020_12_SPEC).resolver
    resolver = type(root)(base_uri=base_uri, registry=root._registry)
    for uri in reversed(previous):
        resolver = type(root)(base_uri=base_uri, registry=root._registry,
                              previous=resolver._previous.push_front(uri))
    grown = root._registry.with_resource("urn:other", root._registry[""])
    for registry in (root._registry, grown):
        ours = resolvers.evolved(resolver, registry)
        theirs = resolver._evolve(registry=registry, base_uri=base_uri)
        assert ours == theirs and ours._registry is theirs._registry
        assert tuple(ours._previous) == tuple(theirs._previous)


def test_a_referencing_whose_fields_changed_gets_its_public_paths(monkeypatch):
    """Where the private fields no longer give referencing's answers, the probe says so, and with
    `DIRECT` off every function (and the plain pointer lookup) takes referencing's own path."""
    assert resolvers.DIRECT is True  # this referencing: the direct paths are the ones tested above
    monkeypatch.setattr(resolvers, "_resolver_with_root_direct", lambda registry, resource: None)
    assert resolvers._same_as_referencing() is False
    monkeypatch.undo()
    monkeypatch.setattr(resolvers, "DIRECT", False)
    registry = Registry().with_resource("urn:x", DRAFT202012.create_resource({"type": "string"}))
    root = DRAFT202012.create_resource({"$id": "urn:root", "$defs": {"a": {"type": "integer"}}})
    theirs = registry.resolver_with_root(root)
    assert resolvers.resolver_with_root(registry, root) == theirs
    assert resolvers.evolved(theirs, registry) == theirs._evolve(registry=registry, base_uri=theirs._base_uri)
    assert refs._plain_pointer_lookup(theirs, "#/$defs/a") is None  # looked up as usual
