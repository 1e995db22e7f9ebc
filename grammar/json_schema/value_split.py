"""The values a subschema rejects, where that is exact without a general complement.

`contains` needs both the elements that match its subschema and those that do not.  Over text, a
complement is not a complement over values (spellings, member order, whitespace), so it is taken
only where it is exact: for scalars, both sides are restricted to canonical spellings (every
scalar lowering here accepts the canonical spelling of each value it accepts, as `oneOf` relies
on, except a few over-strict formats; ``not`` complements scalars the same way); a container type
must be matched by the subschema either wholly (``{"type": "array"}``) or not at all
(``{"type": "string"}``, ``{"const": 3}``).
Anything else is refused with its reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Union

from formwork.grammar.ir import And, Node, Not, Nothing, alt
from formwork.grammar.json_schema.expand import APPLICATORS, Sub
from formwork.grammar.json_schema.one_of import CANONICAL_SCALARS, possible_types
from formwork.schemas.keywords import ANNOTATION_KEYWORDS

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

#: Synthetic type restrictions added to a conjunction (module constants: the lowering's memos
#: key conjunctions by the identity of their schemas, so these must live as long as the process).
SCALARS = {"type": ["null", "boolean", "number", "string"]}
CONTAINER_TYPES = {"array": {"type": "array"}, "object": {"type": "object"}}

_STRUCTURE = frozenset({"$schema", "$id", "$anchor", "$dynamicAnchor", "$defs", "definitions",
                        "$comment"}) | ANNOTATION_KEYWORDS | frozenset(APPLICATORS)
_SCALAR = frozenset({"type", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
                     "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_ARRAY = frozenset({"items", "prefixItems", "additionalItems", "contains", "minContains",
                    "maxContains", "minItems", "maxItems", "uniqueItems", "unevaluatedItems"})
_OBJECT = frozenset({"properties", "patternProperties", "additionalProperties", "required",
                     "minProperties", "maxProperties", "propertyNames", "dependentRequired",
                     "dependentSchemas", "dependencies", "unevaluatedProperties"})
#: Keywords that leave a container type wholly matched (those of the other types).
_WHOLE = {"array": _STRUCTURE | _SCALAR | _OBJECT, "object": _STRUCTURE | _SCALAR | _ARRAY}
#: Formats whose languages are stricter than the format (see `one_of`).
_INEXACT_FORMATS = frozenset({"hostname", "email", "time", "date-time"})


@dataclass(frozen=True, slots=True)
class ValueSplit:
    """A subschema split by value kind: the container types it matches wholly (`whole`) or not
    at all (`never`), and its scalar values' canonical spellings (`scalars`)."""

    sub: Sub
    whole: frozenset[str]
    never: frozenset[str]
    scalars: Node


def split_values(lw: "Lowerer", sub: Sub, depth: int) -> Union[ValueSplit, str]:
    """The `ValueSplit` of `sub`, or why its complement cannot be taken exactly."""
    alts = lw.expand(sub)
    partial: set[str] = set()
    whole: set[str] = set()
    never = {"array", "object"}
    for a in alts:
        for s in a:
            if not isinstance(s.schema, dict):
                continue
            if s.schema.get("format") in _INEXACT_FORMATS:
                return (f"format {s.schema['format']!r} at {s.pointer or '#'} is enforced more "
                        "strictly than specified, so its complement would admit matching strings")
        types = possible_types(a)
        for t in ("array", "object"):
            if t not in types:
                continue
            never.discard(t)
            if all(not s.exclude and (not isinstance(s.schema, dict)
                                      or _WHOLE[t].issuperset(s.schema)) for s in a):
                whole.add(t)
            else:
                partial.add(t)
    partial -= whole
    if partial:
        t = sorted(partial)[0]
        return (f"it may match some {t}s and not others, and the complement of a container "
                "language over text is not a complement over values")
    scalars = lw.lower_subs([sub, Sub(SCALARS, None, sub.pointer)], depth)
    return ValueSplit(sub, frozenset(whole), frozenset(never), scalars)


def rejected_by(lw: "Lowerer", conj: list[Sub], splits: list[ValueSplit], depth: int,
                matched: Optional[list[ValueSplit]] = None) -> Node:
    """The values of the conjunction `conj` that every subschema of `matched` accepts and every
    one of `splits` rejects (canonical scalar spellings; containers as their types decide)."""
    matched = matched or []
    parts = []
    for t, schema in CONTAINER_TYPES.items():
        if all(t in m.whole for m in matched) and all(t in s.never for s in splits):
            parts.append(lw.lower_subs([*conj, Sub(schema, None, conj[0].pointer if conj else "")],
                                       depth))
    scalar = lw.lower_subs([*conj, *(m.sub for m in matched), Sub(SCALARS, None, "")], depth)
    if splits and not isinstance(scalar, Nothing):
        scalar = And(And(scalar, CANONICAL_SCALARS), Not(alt(*(s.scalars for s in splits))))
    return alt(*parts, scalar)
