"""Enumerating the direct subschemas of a schema object, per draft."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from formwork.schemas.keywords import (DEFINITION_CONTAINERS, DRAFT_07, INSTANCE_DESCENDING,
                                       SUBSCHEMA_KEYWORDS, Shape)


@dataclass(frozen=True, slots=True)
class Subschema:
    """A direct subschema: the keyword holding it, its path below the parent schema object
    (e.g. `("properties", "name")`), the subschema, and whether it applies to a member of the
    instance (a property value, an element or a key) rather than the instance itself."""

    keyword: str
    tokens: tuple[str, ...]
    schema: Any
    descends: bool


def is_schema(value: Any) -> bool:
    """JSON Schemas are objects or booleans."""
    return isinstance(value, (dict, bool))


def ref_overrides_siblings(schema: Any, draft: str) -> bool:
    """In draft-07 a `$ref` makes every sibling keyword ignored."""
    return draft == DRAFT_07 and isinstance(schema, dict) and "$ref" in schema


def subschemas(schema: Any, draft: str) -> Iterator[Subschema]:
    """The direct subschemas of `schema` under `draft`'s keywords, in document order.

    Draft-07 siblings of `$ref` are ignored by that draft, so only their definition containers
    (still `$ref` targets) are yielded.
    """
    for keyword, tokens, sub, descends in subschema_tuples(schema, draft):
        yield Subschema(keyword, tokens, sub, descends)


def subschema_tuples(schema: Any, draft: str) -> Iterator[tuple[str, tuple[str, ...], Any, bool]]:
    """`subschemas` as plain (keyword, tokens, schema, descends) tuples, for hot loops."""
    if not isinstance(schema, dict):
        return
    layout = SUBSCHEMA_KEYWORDS[draft]
    only_definitions = ref_overrides_siblings(schema, draft)
    for keyword, value in schema.items():
        shape = layout.get(keyword)
        if shape is None or (only_definitions and keyword not in DEFINITION_CONTAINERS):
            continue
        descends = keyword in INSTANCE_DESCENDING
        for tokens, sub in _members(keyword, shape, value):
            yield keyword, tokens, sub, descends


def _members(keyword: str, shape: Shape, value: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
    if shape is Shape.SCHEMA or (shape is Shape.SCHEMA_OR_LIST and not isinstance(value, list)):
        if is_schema(value):
            yield (keyword,), value
    elif shape in (Shape.SCHEMA_LIST, Shape.SCHEMA_OR_LIST):
        if isinstance(value, list):
            for index, sub in enumerate(value):
                if is_schema(sub):
                    yield (keyword, str(index)), sub
    elif isinstance(value, dict):  # SCHEMA_MAP, MAP_OF_SCHEMA_OR_STRINGS
        for name, sub in value.items():
            if is_schema(sub):
                yield (keyword, name), sub
