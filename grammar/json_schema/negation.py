"""``not``: the complement of a subschema, split by JSON type.

A value fails ``not: N`` exactly when it is outside N.  Over text a complement is not a complement
over values (one value has many spellings), so the lowering takes it per JSON type:

* scalars: the canonical spellings of the scalar values the conjunction allows, minus the
  spellings of N's scalars (`scalar_complement`).  Exact because every scalar lowering accepts
  the canonical spelling of each value it accepts (see `one_of`), except a few over-strict formats,
  which are refused here;
* arrays and objects: by their shape (`factored.container_violations`): the ways to violate
  each keyword, as synthetic schemas the usual lowering merges with the rest of the conjunction;
  a keyword with no such schema is refused with its reason and pointer.

The complement of a recursive language (a ``$ref`` cycle) is never taken: only scalars are
complemented over text, and they never recurse.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

from formwork.grammar.ir import NOTHING, And, Node, Not, Nothing, alt
from formwork.grammar.json_schema.errors import OneOfOverlapError, UnsupportedSchemaError
from formwork.grammar.json_schema.expand import Alternative, Sub, Synthetic
from formwork.grammar.json_schema.formats import INEXACT
from formwork.grammar.json_schema.one_of import CANONICAL_SCALARS
from formwork.grammar.json_schema.type_restrictions import CONTAINER_TYPES, restriction
from formwork.grammar.json_schema.factored import container_violations
from formwork.grammar.json_schema.violation_parts import CannotNegate
from formwork.grammar.json_schema.violations import conjunctions
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

#: Keywords that may reject a scalar (any other keyword accepts every scalar).
_SCALAR_KEYWORDS = frozenset({
    "type", "const", "enum", "not", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format"})
class Negation(NamedTuple):
    """``not: target``, and the keyword and pointer its refusals name."""

    target: Sub
    keyword: str
    pointer: str


def negations(lw: "Lowerer", subs: list[Sub]) -> list[Negation]:
    """The ``not`` keywords of a conjunction."""
    out = []
    for s in subs:
        schema = s.schema
        if (type(schema) is dict or isinstance(schema, dict)) and "not" in schema:
            target = lw.expander.child(s, "not")
            if not isinstance(schema, Synthetic):
                out.append(Negation(target, "not", child(s.pointer, "not")))
            else:  # made for `if`/`oneOf` (labelled), or inside another complement
                out.append(Negation(target, *(schema.label or ("not", target.pointer))))
    return out


def refuse(lw: "Lowerer", neg: Negation, why: str) -> None:
    """Report that the complement of `neg` cannot be built (lenient: a warning; the caller
    then drops the negation for the values concerned)."""
    if neg.keyword == "oneOf":
        lw.report("oneOf", neg.pointer, "this branch overlaps another one, and 'exactly one' "
                  f"needs its complement, which cannot be built exactly: {why}", OneOfOverlapError)
    else:
        lw.report(neg.keyword, neg.pointer, f"the complement cannot be built exactly: {why}",
                  UnsupportedSchemaError)


# ---------------------------------------------------------------------- scalars
def scalar_complement(lw: "Lowerer", positive: Node, negs: list[Negation],
                      types: tuple[str, ...], depth: int) -> Node:
    """The canonical spellings in `positive` (a scalar language of `types`) of values that no
    negation's target accepts."""
    if isinstance(positive, Nothing):
        return positive
    matched = []
    for neg in negs:
        if _all_scalars(lw, neg.target):  # e.g. an `if` on object members: no scalar is outside
            return NOTHING
        why = _inexact(lw, neg.target)
        if why is not None:
            refuse(lw, neg, why)
            continue
        # scalars never recurse: this is regular even where the target's containers are not
        matched.append(lw.lower_subs([neg.target, Sub(restriction(types), None, neg.pointer)],
                                     depth))
    node = And(positive, CANONICAL_SCALARS)
    return And(node, Not(alt(*matched))) if matched else node


def _all_scalars(lw: "Lowerer", target: Sub) -> bool:
    """Whether some alternative of `target` has no keyword that constrains scalars."""
    return any(all(not s.exclude and (s.schema is True or isinstance(s.schema, dict)
                                      and _SCALAR_KEYWORDS.isdisjoint(s.schema)) for s in a)
               for a in lw.expand(target))


def _inexact(lw: "Lowerer", target: Sub) -> Optional[str]:
    """Why the scalar lowering of `target` may miss values it accepts, or None."""
    for a in lw.expand(target):
        for s in a:
            if isinstance(s.schema, dict) and s.schema.get("format") in INEXACT:
                return (f"format {s.schema['format']!r} at {s.pointer or '#'} is enforced more "
                        "strictly than specified, so its complement would admit matching strings")
    return None


# ---------------------------------------------------------------------- containers
def container_alternatives(lw: "Lowerer", negs: list[Negation], kind: str, base: Alternative
                           ) -> list[Alternative]:
    """The containers of `kind` ("array", "object") outside every negation's target, as
    alternatives (conjunctions of synthetic or user subschemas) to merge with the positive
    keywords `base` (those they rule out are dropped); a negation refused in lenient mode leaves
    its containers unconstrained."""
    out: list[Alternative] = [[]]
    for neg in negs:
        try:
            out = conjunctions(out, container_violations(lw, neg.target, kind, base), neg.pointer,
                               kind, base)
        except CannotNegate as exc:
            refuse(lw, neg, str(exc))
        if not out:
            break
    return out


def negated_container(lw: "Lowerer", subs: list[Sub], negs: list[Negation], kind: str,
                      depth: int) -> Node:
    """The containers of `kind` that satisfy the conjunction `subs` and none of its ``not``
    targets: the positive keywords merged with each way of violating every target."""
    base = [_without_not(lw, s) for s in subs]
    only = Sub(CONTAINER_TYPES[kind], None, subs[0].pointer)
    return alt(*(lw.lower_alternative([*base, *violation, only], depth)
                 for violation in container_alternatives(lw, negs, kind, base)))


def _without_not(lw: "Lowerer", s: Sub) -> Sub:
    """`s` without its ``not`` (and exclusions, which apply to scalars only), made once."""
    if not isinstance(s.schema, dict) or "not" not in s.schema:
        return s if not s.exclude else Sub(s.schema, s.resolver, s.pointer)
    return lw.expander.synthetic(("without not", id(s.schema), s.pointer), s, lambda: {
        k: v for k, v in s.schema.items() if k != "not"})
