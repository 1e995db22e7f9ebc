"""The ways an object violates one subschema's object keywords (see `violations`): a required
member absent, a declared member's value rejected, too few or too many members, or a member
whose value ``additionalProperties`` / ``patternProperties`` rejects (a `witnesses.Witness`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from formwork.grammar.json_schema.expand import WITNESS, Alternative, Sub
from formwork.grammar.json_schema.unevaluated import plain_unevaluated
from formwork.grammar.json_schema.violation_parts import always_holds, negated, same, schema_of, shared
from formwork.grammar.json_schema.witnesses import Witness
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer


def object_violations(lw: "Lowerer", s: Sub) -> list[Alternative]:
    """The ways an object violates `s` (a union)."""
    schema = s.schema
    out: list[Alternative] = []
    for name in schema.get("required", ()):
        out.append(shared(lw, s, ("object", "absent", name),
                          lambda name=name: {"properties": {name: False}}))
    for name, value in lw.expander.members(s, "properties"):
        if always_holds(value):
            continue
        out.append(shared(lw, s, ("object", "bad", name, same(value)),
                          lambda name=name, value=value: {
                              "required": [name], "properties": {name: negated(value)}}))
    out.extend(_member_witnesses(lw, s))
    if schema.get("minProperties", 0) > 0:
        n = int(schema["minProperties"])
        out.append(shared(lw, s, ("object", "fewer", n), lambda: {"maxProperties": n - 1}))
    if "maxProperties" in schema:
        n = int(schema["maxProperties"])
        out.append(shared(lw, s, ("object", "more", n), lambda: {"minProperties": n + 1}))
    return out


def additional_schema(schema: dict) -> Any:
    """The schema of the members `schema` does not declare: ``additionalProperties``, or a plain
    ``unevaluatedProperties`` (which acts as it), or None."""
    if "additionalProperties" in schema:
        return schema_of(schema["additionalProperties"])
    if plain_unevaluated(schema, "unevaluatedProperties"):
        return schema_of(schema["unevaluatedProperties"])
    return None


def _member_witnesses(lw: "Lowerer", s: Sub) -> list[Alternative]:
    """The objects with a member `s`'s ``additionalProperties`` (or a plain
    ``unevaluatedProperties``) or one of its ``patternProperties`` rejects."""
    schema = s.schema
    out = []
    for pattern, value in lw.expander.members(s, "patternProperties"):
        if value.schema is not True and value.schema != {}:
            out.append(_witness(lw, s, value, Witness(
                (), pattern, (), value, _outside(lw, s, value),
                child(s.pointer, "patternProperties"))))
    additional = additional_schema(schema)
    if additional is not None and additional is not True and additional != {}:
        keyword = "additionalProperties" if "additionalProperties" in schema \
            else "unevaluatedProperties"
        value = lw.expander.child(s, keyword)
        out.append(_witness(lw, s, value, Witness(
            tuple(schema.get("properties") or ()), None, tuple(schema.get("patternProperties") or ()),
            value, _outside(lw, s, value), child(s.pointer, keyword))))
    return out


def _outside(lw: "Lowerer", s: Sub, value: Sub) -> Optional[Sub]:
    """``not: value`` as a subschema of `s` (None for a false `value`: any value is outside)."""
    if value.schema is False:
        return None
    return shared(lw, s, ("outside", same(value)), lambda: {"not": value})[0]


def _witness(lw: "Lowerer", s: Sub, value: Sub, witness: Witness) -> list[Sub]:
    return shared(lw, s, ("object", "witness", *witness[:3], same(value)),
                  lambda: {WITNESS: witness})
