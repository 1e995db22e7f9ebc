"""`referencing` resolvers made directly, as `referencing` itself would make them: its `attrs`
`evolve` reads the class's fields on every call, a few microseconds a resolver that every compile
pays (`tests/test_schemas_ref_resolvers.py` compares them with referencing's, field for field).

They read `referencing`'s private fields, and its version is not pinned: `DIRECT` says whether,
checked once at import against `referencing`'s own answers, they still make what it makes; where
they do not (a later `referencing`), each function takes `referencing`'s public path instead."""
from __future__ import annotations

from typing import Any

from referencing import Registry, Resource
from referencing._core import Resolver  # the public type, defined privately


def evolved(resolver: Resolver[Any], registry: Registry[Any]) -> Resolver[Any]:
    """`resolver._evolve(registry=registry, base_uri=resolver._base_uri)`, made directly (attrs'
    `evolve` reads the class's fields on every call): the same base URI over `registry`, its own
    base URI pushed onto the dynamic scope when that is still empty."""
    if not DIRECT:
        return resolver._evolve(registry=registry, base_uri=resolver._base_uri)
    return _evolved_direct(resolver, registry)


def _evolved_direct(resolver: Resolver[Any], registry: Registry[Any]) -> Resolver[Any]:
    uri, previous = resolver._base_uri, resolver._previous
    if uri and not previous:
        previous = previous.push_front(uri)
    return type(resolver)(base_uri=uri, registry=registry, previous=previous)


def resolver_with_root(registry: Registry[Any], resource: Resource[Any]) -> Resolver[Any]:
    """`registry.resolver_with_root(resource)`, the grown registry made directly (attrs' `evolve`
    reads the class's fields on every call; ~25 us of a cold compile): the resource added under
    its id ("" without one) and marked uncrawled, the base URI its id."""
    if not DIRECT:
        return registry.resolver_with_root(resource)
    return _resolver_with_root_direct(registry, resource)


def _resolver_with_root_direct(registry: Registry[Any], resource: Resource[Any]) -> Resolver[Any]:
    uri = resource.id() or ""
    key = uri.rstrip("#")  # as `Registry.with_resources` files it
    grown = Registry(resources=registry._resources.insert(key, resource), anchors=registry._anchors,
                     uncrawled=registry._uncrawled.insert(key), retrieve=registry._retrieve)
    return Resolver(base_uri=uri, registry=grown)


def _same_as_referencing() -> bool:
    """Whether the direct constructions equal `referencing`'s own on a probe (a root with an
    id and one without, a lookup's resolver evolved over a grown registry); False on any error."""
    try:
        from referencing.jsonschema import DRAFT202012

        registry = Registry().with_resource("urn:other", DRAFT202012.create_resource({"type": "string"}))
        for contents in ({"$id": "urn:probe", "type": "object"}, {"type": "object"}):
            resource = DRAFT202012.create_resource(contents)
            ours = _resolver_with_root_direct(registry, resource)
            theirs = registry.resolver_with_root(resource)
            if ours != theirs or ours._previous != theirs._previous:
                return False
            inner = theirs.lookup("urn:other").resolver
            if _evolved_direct(inner, registry) != inner._evolve(registry=registry, base_uri=inner._base_uri):
                return False
        return isinstance(registry._resources.get("urn:other"), Resource)
    except Exception:  # noqa: BLE001 - any change in the private fields: take the public paths
        return False


#: Whether the direct constructions (and `refs._plain_pointer_lookup`'s read of the resource map)
#: are used: see the module docstring.
DIRECT = _same_as_referencing()
