"""`referencing` resolvers made directly, as `referencing` itself would make them: its `attrs`
`evolve` reads the class's fields on every call, a few microseconds a resolver that every compile
pays (`tests/test_schemas_ref_resolvers.py` compares them with referencing's, field for field)."""
from __future__ import annotations

from typing import Any

from referencing import Registry, Resource
from referencing._core import Resolver  # the public type, defined privately


def evolved(resolver: Resolver[Any], registry: Registry[Any]) -> Resolver[Any]:
    """`resolver._evolve(registry=registry, base_uri=resolver._base_uri)`, made directly (attrs'
    `evolve` reads the class's fields on every call): the same base URI over `registry`, its own
    base URI pushed onto the dynamic scope when that is still empty."""
    uri, previous = resolver._base_uri, resolver._previous
    if uri and not previous:
        previous = previous.push_front(uri)
    return type(resolver)(base_uri=uri, registry=registry, previous=previous)


def resolver_with_root(registry: Registry[Any], resource: Resource[Any]) -> Resolver[Any]:
    """`registry.resolver_with_root(resource)`, the grown registry made directly (attrs' `evolve`
    reads the class's fields on every call; ~25 us of a cold compile): the resource added under
    its id ("" without one) and marked uncrawled, the base URI its id."""
    uri = resource.id() or ""
    key = uri.rstrip("#")  # as `Registry.with_resources` files it
    grown = Registry(resources=registry._resources.insert(key, resource), anchors=registry._anchors,
                     uncrawled=registry._uncrawled.insert(key), retrieve=registry._retrieve)
    return Resolver(base_uri=uri, registry=grown)
