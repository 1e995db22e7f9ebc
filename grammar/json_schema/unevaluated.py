"""``unevaluatedProperties`` / ``unevaluatedItems`` beside in-place applicators.

Without an in-place applicator beside it, the keyword sees only its own schema object's
annotations and acts as ``additionalProperties`` / ``items`` (`plain_unevaluated`; the object and
array lowerings read it so).  Otherwise the expansion of its schema object gives alternatives,
each a conjunction of the subschemas that hold for an instance taking that branch (``allOf``,
``$ref``, the ``oneOf`` branch, ``if`` and ``then`` or ``else`` (or ``if`` alone), present
``dependentSchemas``);
every one of them succeeds, so its annotations are collected.  Each alternative gets a synthetic
subschema over what it evaluates: ``properties``/``patternProperties`` naming the evaluated keys
and ``additionalProperties`` the unevaluated schema (for items: ``prefixItems`` as long as the
longest evaluated prefix and ``items``); an ``additionalProperties``, ``items`` or nested
``unevaluated*`` in the alternative evaluates everything.  Subschemas the expansion adds for
``not`` and dependencies carry no annotations that matter (a ``not`` holds none; an absent
dependency key is absent).

An instance matching several ``anyOf`` branches is evaluated by all of them: beside a direct
``anyOf``, each alternative may also take any of the other branches (up to
`MAX_ANY_OF_ALTERNATIVES` alternatives).  The conservative corner: an ``anyOf`` nested deeper (or
past that bound) is seen one branch at a time, so an instance it evaluates only through several
branches may be rejected although valid (never the reverse: an alternative's evaluated set is
never larger than the instance's).  ``unevaluatedItems`` beside a ``contains`` (which evaluates the elements that
match it) is refused.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional

from formwork.grammar.json_schema.errors import UnsupportedSchemaError
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.expand import Alternative, Expander, OneOfResolver, Sub

UNEVALUATED = ("unevaluatedProperties", "unevaluatedItems")
MAX_ANY_OF_ALTERNATIVES = 64  # alternatives combining the branches of an anyOf beside it
_IN_PLACE = ("allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "then", "else",
             "dependentSchemas", "dependencies")
#: The keywords beside `unevaluated*` whose annotations it would have to collect.
_ANNOTATING = {"unevaluatedProperties": _IN_PLACE, "unevaluatedItems": _IN_PLACE + ("contains",)}


def plain_unevaluated(schema: Any, keyword: str) -> bool:
    """True when `keyword` (unevaluatedProperties/unevaluatedItems) in `schema` sees only the
    annotations of the same object's properties/patternProperties/prefixItems: it then acts
    exactly like additionalProperties / items."""
    return isinstance(schema, dict) and keyword in schema and \
        not any(k in schema for k in _ANNOTATING[keyword])


def with_evaluated(ex: "Expander", sub: "Sub", alts: list["Alternative"], one_of: "OneOfResolver",
                   refs: tuple[int, ...]) -> list["Alternative"]:
    """The alternatives of `sub`, each with its non-plain `unevaluated*` as a synthetic subschema
    over what that alternative evaluates (`one_of` and `refs` as in `Expander.expand`)."""
    kinds = [kw for kw in UNEVALUATED if kw in sub.schema and not plain_unevaluated(sub.schema, kw)]
    if not kinds:
        return alts
    if "if" in sub.schema and "then" not in sub.schema and "else" not in sub.schema:
        # `if` alone validates nothing, yet where it holds its annotations count: the instances
        # holding it, evaluated with it, or any instance, evaluated without (stricter, so sound)
        cond = ex.expand(ex.child(sub, "if"), one_of, refs)
        alts = ex._product(alts, [*cond, []], sub)
    if "anyOf" in sub.schema:
        # an instance matching several branches is evaluated by all of them: each alternative
        # may take the other branches too (where they hold, their annotations count)
        more = [[[], *ex.expand(ex.child(sub, "anyOf", i), one_of, refs)]
                for i in range(len(sub.schema["anyOf"]))]
        if len(alts) * math.prod(map(len, more)) <= MAX_ANY_OF_ALTERNATIVES:
            for options in more:
                alts = ex._product(alts, options, sub)
    out = []
    for a in alts:
        marks = [m for m in (_mark(ex, sub, a, kw) for kw in kinds) if m is not None]
        out.append(a + marks)
    return out


def _mark(ex: "Expander", sub: "Sub", alt: "Alternative", keyword: str) -> Optional["Sub"]:
    """The synthetic subschema enforcing `sub`'s `keyword` over `alt`, or None when `alt`
    evaluates every property / item."""
    label = (keyword, child(sub.pointer, keyword))
    rest = ex.child(sub, keyword)
    if keyword == "unevaluatedProperties":
        evaluated = _evaluated_keys(sub, alt)
        if evaluated is None:
            return None
        names, patterns = evaluated
        return ex.synthetic(("unevaluated", id(sub.schema), keyword, names, patterns), sub,
                            lambda: {"properties": dict.fromkeys(names, True),
                                     "patternProperties": dict.fromkeys(patterns, True),
                                     "additionalProperties": rest}, label)
    prefix = _evaluated_prefix(sub, alt)
    if prefix is None:
        return None
    return ex.synthetic(("unevaluated", id(sub.schema), keyword, prefix), sub,
                        lambda: {"prefixItems": [True] * prefix, "items": rest}, label)


def _evaluated_keys(sub: "Sub", alt: "Alternative") -> Optional[tuple[tuple, tuple]]:
    """(property names, patterns) the subschemas of `alt` evaluate; None: every property."""
    names: dict[str, None] = {}
    patterns: dict[str, None] = {}
    for s in alt:
        sch = s.schema
        if not isinstance(sch, dict):
            continue
        if "additionalProperties" in sch or (s is not sub and "unevaluatedProperties" in sch):
            return None
        names.update(dict.fromkeys(sch.get("properties", ())))
        patterns.update(dict.fromkeys(sch.get("patternProperties", ())))
    return tuple(names), tuple(patterns)


def _evaluated_prefix(sub: "Sub", alt: "Alternative") -> Optional[int]:
    """How many leading elements the subschemas of `alt` evaluate; None: every element."""
    prefix = 0
    for s in alt:
        sch = s.schema
        if not isinstance(sch, dict):
            continue
        if "contains" in sch:
            raise UnsupportedSchemaError(
                "unevaluatedItems", child(sub.pointer, "unevaluatedItems"),
                f"the contains at {child(s.pointer, 'contains')} evaluates the elements that "
                "match it, which depend on the element values; not supported")
        items = sch.get("items")
        if isinstance(items, list):  # positional items (drafts before 2020-12)
            if "additionalItems" in sch:
                return None
            prefix = max(prefix, len(items))
        elif "items" in sch or (s is not sub and "unevaluatedItems" in sch):
            return None
        prefix = max(prefix, len(sch.get("prefixItems", ())))
    return prefix
