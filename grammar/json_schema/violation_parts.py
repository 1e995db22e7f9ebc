"""The pieces violation schemas are built of (see `violations`): synthetic subschemas keyed so
that equal violations are one subschema, ``not`` of a subschema, and `CannotNegate`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from formwork.grammar.json_schema.expand import Sub, Synthetic, constrains

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer


class CannotNegate(Exception):
    """Why a complement cannot be built exactly (turned into a schema error by `refuse`)."""


def synthetic(lw: "Lowerer", s: Sub, key: tuple, make) -> list[Sub]:
    """The synthetic subschema of `s` for `key` (made once by `make`)."""
    return [lw.expander.synthetic((id(s.schema), s.pointer) + key, s, make)]


def shared(lw: "Lowerer", s: Sub, key: tuple, make) -> list[Sub]:
    """A synthetic subschema that every `s` in the same scope shares for `key` (which spells
    out all it holds): violations of equal keywords in sibling branches are one subschema, so
    a conjunction of complements drops the repeats."""
    return [lw.expander.synthetic(("shared", id(s.resolver)) + key, s, make)]


def same(value: Sub) -> tuple:
    """A key that equal user subschemas in one scope share (their text and resolver); any
    other subschema's is its identity."""
    if type(value.schema) is dict or isinstance(value.schema, bool):
        return ("text", repr(value.schema), id(value.resolver))
    return ("id", id(value.schema), value.pointer)


def negated(target: Any) -> Synthetic:
    """``{"not": target}`` (a `Sub`, or a plain schema)."""
    return Synthetic({"not": target})


def schema_of(value: Any) -> Any:
    """A subschema's schema, whether a synthetic schema holds it as a `Sub` or not."""
    return value.schema if isinstance(value, Sub) else value


def always_holds(value: Any) -> bool:
    """Whether the subschema (a `Sub` or not) accepts every value: ``true``, ``{}``, or only
    annotations and keys JSON Schema ignores; none of its violations is to be built."""
    schema = schema_of(value)
    return schema is True or (isinstance(schema, dict) and not constrains(schema))
