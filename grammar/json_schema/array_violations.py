"""The ways an array violates one subschema's array keywords (see `violations`): a prefix
element or a later one rejected, too few or too many elements, or a miscount of ``contains``."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from formwork.grammar.json_schema.expand import Alternative, Sub
from formwork.grammar.json_schema.unevaluated import plain_unevaluated
from formwork.grammar.json_schema.violation_parts import (
    CannotNegate, always_holds, negated, schema_of, synthetic,
)
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

#: Prefix positions past which `items` has no complement (2**n schemas).
MAX_DECLARED = 5
#: Drafts whose `items` may be a list of positional schemas.
_ITEMS_LIST_DRAFTS = frozenset({"draft-07", "draft-06", "draft-04", "2019-09"})


def prefix_keyword(lw: "Lowerer") -> str:
    """The keyword holding positional item schemas in the document's draft."""
    return "items" if lw.doc.draft.name in _ITEMS_LIST_DRAFTS else "prefixItems"


def array_violations(lw: "Lowerer", s: Sub, unique: bool) -> list[Alternative]:
    """The ways an array violates `s`; `unique`: the arrays asked for have unique elements, so
    none violates ``uniqueItems``."""
    schema = s.schema
    out: list[Alternative] = []
    prefix_kw = prefix_keyword(lw)
    prefix = schema.get(prefix_kw)
    if prefix_kw == "items" and not isinstance(prefix, list):
        prefix = None
    for i, _ in enumerate(prefix or ()):
        item = lw.expander.child(s, prefix_kw, i)
        if always_holds(item):
            continue
        out.append(synthetic(lw, s, ("array", "bad item", i), lambda i=i, item=item: {
            "minItems": i + 1, prefix_kw: [True] * i + [negated(item)]}))
    rest_kw = "additionalItems" if prefix_kw == "items" and prefix is not None else "items"
    rest = schema_of(schema.get(rest_kw))
    if rest_kw == "items" and isinstance(rest, list):
        rest = None
    if rest is None and plain_unevaluated(schema, "unevaluatedItems"):  # acts as `items`
        rest_kw, rest = "unevaluatedItems", schema_of(schema["unevaluatedItems"])
    if rest is not None and rest is not True and rest != {}:
        if rest is False:  # violated by one element past the prefix
            n = len(prefix or ())
            out.append(synthetic(lw, s, ("array", "longer",), lambda: {"minItems": n + 1}))
        else:
            out.extend(_element_past_prefix(lw, s, rest_kw, len(prefix or ())))
    if "contains" in schema:
        out.extend(_miscounted(lw, s))
    if schema.get("uniqueItems") is True and not unique:
        raise CannotNegate(f"'uniqueItems' at {child(s.pointer, 'uniqueItems')}: the arrays "
                           "violating it (through a repeated element) are not described by a "
                           "schema of their own")
    if schema.get("minItems", 0) > 0:
        n = int(schema["minItems"])
        out.append(synthetic(lw, s, ("array", "fewer",), lambda: {"maxItems": n - 1}))
    if "maxItems" in schema:
        n = int(schema["maxItems"])
        out.append(synthetic(lw, s, ("array", "more",), lambda: {"minItems": n + 1}))
    return out


def _element_past_prefix(lw: "Lowerer", s: Sub, rest_kw: str, k: int) -> list[Alternative]:
    """The arrays with an element past the first k that the schema T of `rest_kw` rejects: for
    each set B of the first k positions, those holding elements T rejects exactly at B and more
    than |B| such elements in all (``contains``/``minContains``)."""
    where = f"{rest_kw!r} at {child(s.pointer, rest_kw)}: the arrays violating it"
    if k > MAX_DECLARED:
        raise CannotNegate(f"{where} are one schema per set of the {k} positions before it (at "
                           f"most {MAX_DECLARED})")
    if k and lw.doc.draft.name == "draft-07":
        raise CannotNegate(f"{where} count the elements it rejects (minContains, which draft-07 "
                           "lacks)")
    rest = lw.expander.child(s, rest_kw)
    prefix_kw = prefix_keyword(lw)

    def make(bad: tuple[bool, ...]) -> dict:
        schema: dict[str, Any] = {"contains": negated(rest)}
        if k:
            schema[prefix_kw] = [negated(rest) if b else rest for b in bad]
        if any(bad):
            schema["minContains"] = sum(bad) + 1
        return schema
    return [synthetic(lw, s, ("array", "bad element", bad), lambda bad=bad: make(bad))
            for bad in itertools.product((False, True), repeat=k)]


def _miscounted(lw: "Lowerer", s: Sub) -> list[Alternative]:
    """The arrays with fewer than minContains (default 1) or more than maxContains elements
    that `contains` matches: none matching is ``items: {not: T}``, the others are counts again."""
    schema = s.schema
    low = int(schema.get("minContains", 1)) if lw.doc.draft.name != "draft-07" else 1
    high = schema.get("maxContains") if lw.doc.draft.name != "draft-07" else None
    target = lw.expander.child(s, "contains")
    out = []
    if low == 1:
        out.append(synthetic(lw, s, ("array", "none match"), lambda: {"items": negated(target)}))
    elif low > 1:
        out.append(synthetic(lw, s, ("array", "too few match"), lambda: {
            "contains": target, "minContains": 0, "maxContains": low - 1}))
    if high is not None:
        out.append(synthetic(lw, s, ("array", "too many match"), lambda: {
            "contains": target, "minContains": int(high) + 1}))
    return out
