"""The objects outside a union of alternatives that a required member tells apart, split by its
value (AsyncAPI's SecurityScheme: a oneOf of a dozen schemes, each requiring ``type`` from its own
enum).

Outside all of A_1 ... A_n is the product of the ways to violate each, which grows as the product
of their counts.  When every A_k requires a member p and allows it only strings from a set E_k,
an object is outside them all exactly when p is absent, or p's value lies in no E_k, or p = v
for a v in some E_k and the object violates each A_k with v in E_k (the others already fail on
p).  That is a union over the values: the products shrink to those of the alternatives sharing
a value (usually one), and the ways to violate an A_k through p's value itself, empty beside
p = v, are dropped.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from formwork.grammar.json_schema.discriminators import string_values
from formwork.grammar.json_schema.expand import CONSTRAINING_KEYWORDS, Alternative, Sub
from formwork.grammar.json_schema.violations import conjunctions, minimal, violations_of

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

_NOT_VALUE_KEYWORDS = CONSTRAINING_KEYWORDS - {"type", "const", "enum"}


def discriminated_violations(lw: "Lowerer", sub: Sub, alternatives: list[Alternative],
                             base: Alternative) -> Optional[list[Alternative]]:
    """The objects outside every one of `alternatives` (a union made for `sub`), split by the
    value of a member they all require from string sets; None when no member does."""
    found = _discriminator(alternatives)
    if found is None:
        return None
    name, allowed = found
    values = sorted(set().union(*allowed))

    def synthetic(key: tuple, make) -> list[Sub]:
        return [lw.expander.synthetic(("discriminated", id(sub.schema), sub.pointer, name) + key,
                                      sub, make)]
    parts = [[synthetic(("absent",), lambda: {"properties": {name: False}})],
             [synthetic(("other", *values), lambda: {"required": [name],
                                             "properties": {name: {"not": {"enum": values}}}})]]
    for value in values:
        out = [synthetic(("equal", value), lambda v=value: {"required": [name],
                                                             "properties": {name: {"const": v}}})]
        for a, strings in zip(alternatives, allowed):
            if value in strings:
                ways = [w for w in violations_of(lw, a, "object", base)
                        if not _value_violation(w, name, value)]
                out = conjunctions(out, ways, sub.pointer, "object", base)
                if not out:
                    break
        parts.append(out)
    return minimal((conj for part in parts for conj in part), sub.pointer, "object", base)


def _discriminator(alternatives: list[Alternative]) -> Optional[tuple[str, list[set[str]]]]:
    """A member every alternative requires with string values from a known set, and those sets
    (one per alternative); None if there is none (or a single alternative)."""
    if len(alternatives) < 2:
        return None
    required = set.intersection(*({r for s in a if isinstance(s.schema, dict)
                                   for r in s.schema.get("required", ()) if isinstance(r, str)}
                                  for a in alternatives))
    for name in sorted(required):
        allowed = [_allowed(a, name) for a in alternatives]
        if all(values is not None for values in allowed):
            return name, allowed
    return None


def _allowed(alternative: Alternative, name: str) -> Optional[set[str]]:
    """The strings `alternative` allows member `name` (None: not a known set of strings)."""
    out: Optional[set[str]] = None
    for s in alternative:
        if not isinstance(s.schema, dict):
            continue
        value = (s.schema.get("properties") or {}).get(name)
        strings = _strings(getattr(value, "schema", value))
        if strings is not None:
            out = strings if out is None else out & strings
    return out


def _strings(schema: Any) -> Optional[set[str]]:
    """`string_values`, except that a `false` member (no value at all) is not a discriminator here."""
    return None if schema is False else string_values(schema)


def _value_violation(way: Alternative, name: str, value: str) -> bool:
    """Whether `way` is "member `name` present with a value its schema rejects" for a schema
    that plainly accepts `value` (so no object with ``name = value`` takes this way)."""
    if len(way) != 1 or not isinstance(way[0].schema, dict):
        return False
    schema = way[0].schema
    props = schema.get("properties")
    if set(schema) != {"required", "properties"} or schema["required"] != [name] \
            or not isinstance(props, dict) or set(props) != {name}:
        return False
    negated = props[name]
    if not isinstance(negated, dict) or set(negated) != {"not"}:
        return False
    target = getattr(negated["not"], "schema", negated["not"])
    return isinstance(target, dict) and _NOT_VALUE_KEYWORDS.isdisjoint(target) and \
        target.get("type", "string") in ("string", ["string"]) and \
        ("const" not in target or target["const"] == value) and \
        ("enum" not in target or value in target["enum"])
