"""The arrays or objects a subschema rejects, as schemas of their own (for ``not``).

A subschema is a union of conjunctions of keywords; a container is outside a conjunction when it
violates one of its keywords, and each violation is again a (synthetic) schema the usual lowering
merges with the rest of a conjunction: ``required: [x]`` is violated by ``properties: {x: false}``,
``properties: {p: T}`` by ``required: [p], properties: {p: {not: T}}``, ``minItems: n`` by
``maxItems: n - 1``, ``items: T`` by ``contains: {not: T}`` (with a prefix, one schema per set
of prefix positions T rejects), ``contains: T`` by ``items: {not: T}`` or counts,
``const``/``enum`` containers member by member or element by element, ``not: T`` by T; a
``type`` without the container's type by every container.  ``additionalProperties: T`` (false
included) and ``patternProperties`` are violated by some member of a kind whose value T rejects:
a `witnesses.Witness` the object lowering walks its member list for.  Violations that the
positive keywords beside the ``not`` rule out are dropped: a member required but outside their
``additionalProperties: false``, repeated elements beside their ``uniqueItems``.
A keyword with no such schema (``propertyNames``, ``uniqueItems``, ...) raises `CannotNegate`
with the reason.  This module combines the violations; `object_violations` and
`array_violations` build them keyword by keyword from the pieces in `violation_parts`.
"""
from __future__ import annotations

import json
from itertools import product
from typing import TYPE_CHECKING, Any, Iterable, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.json_schema.array_violations import array_violations, prefix_keyword
from formwork.grammar.json_schema.expand import (
    APPLICATORS, MAX_ALTERNATIVES, WITNESS, Alternative, Sub,
)
from formwork.grammar.json_schema.object_violations import additional_schema, object_violations
from formwork.grammar.json_schema.violation_parts import CannotNegate, always_holds, negated, schema_of
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

_OBJECT = frozenset({"properties", "patternProperties", "additionalProperties", "required",
                     "minProperties", "maxProperties", "propertyNames", "dependentRequired",
                     "dependentSchemas", "dependencies", "unevaluatedProperties"})
_ARRAY = frozenset({"items", "prefixItems", "additionalItems", "contains", "minContains",
                    "maxContains", "minItems", "maxItems", "uniqueItems", "unevaluatedItems"})
#: Container keywords (and dynamic references) whose violation is not a schema of its own (the
#: expansion's applicators, such as the dependency keywords, are alternatives by then).
_REFUSED = {
    "object": (_OBJECT - {"properties", "required", "minProperties", "maxProperties",
                          "additionalProperties", "patternProperties", "unevaluatedProperties"}
               - set(APPLICATORS)) | {"$dynamicRef", "$recursiveRef"},
    "array": (_ARRAY - {"items", "prefixItems", "minItems", "maxItems", "additionalItems",
                        "uniqueItems", "contains", "minContains", "maxContains"})
    | {"$dynamicRef", "$recursiveRef"},
}


def expanded_violations(lw: "Lowerer", target: Sub, kind: str, base: Alternative = ()
                        ) -> list[Alternative]:
    """The containers of `kind` that `target` rejects: those outside each alternative of its
    expansion (`factored.container_violations` negates its applicators one by one), beside
    `base` (see there)."""
    out: list[Alternative] = [[]]
    for a in lw.expand(target):
        out = conjunctions(out, violations_of(lw, a, kind, base), target.pointer, kind, base)
        if not out:
            break
    return out


def violations_of(lw: "Lowerer", subs: Alternative, kind: str, base: Alternative
                  ) -> list[Alternative]:
    """The ways a container of `kind` can violate the conjunction `subs` (a union; ``[[]]``
    when it accepts no container of `kind`, so every one does)."""
    ors = _alternative_violations(lw, subs, kind, base)
    return [[]] if ors is None else ors


def conjunctions(left: list[Alternative], right: list[Alternative], pointer: str, kind: str,
                 base: Alternative = ()) -> list[Alternative]:
    """Every conjunction of one alternative of each side, as `minimal` keeps them."""
    return minimal((a + b for a, b in product(left, right)), pointer, kind, base)


def minimal(conjs: Iterable[Alternative], pointer: str, kind: str, base: Alternative = ()
            ) -> list[Alternative]:
    """The union `conjs` less repeats, those that plainly hold no container of `kind` (beside
    `base`) and those holding all of another one's subschemas (they add nothing to the union);
    past `MAX_ALTERNATIVES` a budget error naming `pointer`."""
    out: dict[frozenset[int], Alternative] = {}
    for conj in conjs:
        if _possible([*base, *conj], kind):
            out.setdefault(frozenset(map(id, conj)), conj)
    keys = sorted(out, key=len)
    kept = [k for i, k in enumerate(keys) if not any(j < k for j in keys[:i])]
    if len(kept) > MAX_ALTERNATIVES:
        raise GrammarBudgetError(f"the complement of the schema at {pointer or '#'} splits into "
                                 f"more than {MAX_ALTERNATIVES} alternatives (ways to violate it)")
    return [out[k] for k in kept]


def _possible(conj: Alternative, kind: str) -> bool:
    """False when `conj` plainly holds no container of `kind`: crossed bounds on its members or
    elements, an object member both absent and required, or required but outside the names an
    ``additionalProperties: false`` (beside no pattern) allows."""
    absent: set[str] = set()
    required: set[str] = set()
    closed: list[set[str]] = []
    what = "Properties" if kind == "object" else "Items"
    low, high = 0, float("inf")
    for s in conj:
        schema = s.schema
        if not isinstance(schema, dict):
            continue
        if kind == "object":
            absent.update(k for k, v in (schema.get("properties") or {}).items()
                          if schema_of(v) is False)
            required.update(schema.get("required", ()))
            if additional_schema(schema) is False and not schema.get("patternProperties"):
                closed.append(set(schema.get("properties") or ()))
        low = max(low, schema.get("min" + what, 0))
        high = min(high, schema.get("max" + what, float("inf")))
    return not absent & required and all(required <= names for names in closed) and low <= high


def _alternative_violations(lw: "Lowerer", subs: Alternative, kind: str, base: Alternative
                            ) -> Optional[list[Alternative]]:
    """The ways a container of `kind` can violate the conjunction `subs` (a union), or None when
    every container of `kind` does."""
    if any(_rejects_kind(s.schema, kind) for s in subs):
        return None
    ors: list[Alternative] = []
    for s in subs:
        schema = s.schema
        if not isinstance(schema, dict):
            continue
        for keyword in ("const", "enum"):
            if keyword in schema:
                values = [schema["const"]] if keyword == "const" else schema["enum"]
                ors.extend(_unequal(lw, s, [v for v in values if _is_kind(v, kind)], kind))
        if WITNESS in schema:  # made only for violations, which are never negated again
            raise CannotNegate(f"the members asked for at {s.pointer or '#'} have no complement")
        if "not" in schema:  # violating `not: T` is satisfying T
            ors.extend(lw.expand(lw.expander.child(s, "not")))
        refused = _REFUSED[kind].intersection(schema)
        for keyword in sorted(refused):
            if not _trivial(keyword, schema):
                raise CannotNegate(f"{keyword!r} at {child(s.pointer, keyword)}: the {kind}s "
                                   f"violating it (through {_WHAT[keyword]}) are not described "
                                   "by a schema of their own")
        ors.extend(object_violations(lw, s) if kind == "object" else
                   array_violations(lw, s, _unique(base)))
    return ors


def _is_kind(value: Any, kind: str) -> bool:
    return isinstance(value, dict if kind == "object" else list)


def _rejects_kind(schema: Any, kind: str) -> bool:
    """Whether `schema` accepts no container of `kind` (by `type`, `const`/`enum` or false)."""
    if schema is False:
        return True
    if not isinstance(schema, dict):
        return False
    t = schema.get("type")
    if t is not None and kind not in ([t] if isinstance(t, str) else t):
        return True
    values = [schema["const"]] if "const" in schema else schema.get("enum", [None])
    return not any(_is_kind(v, kind) for v in values) if "const" in schema or "enum" in schema \
        else False


_WHAT = {"propertyNames": "a member name it rejects",
         "dependentRequired": "a member present without its dependencies",
         "dependentSchemas": "a member whose dependent schema rejects the object",
         "dependencies": "a member whose dependencies the object misses",
         "contains": "the count of elements it matches",
         "unevaluatedItems": "an unevaluated element",
         "$dynamicRef": "a dynamic reference", "$recursiveRef": "a dynamic reference"}


def _trivial(keyword: str, schema: dict) -> bool:
    """Whether `keyword` of `schema` constrains nothing here: subschemas that always hold, or an
    ``unevaluatedItems`` the expansion's marks carry or the violations below take."""
    value = schema_of(schema[keyword])
    if keyword == "unevaluatedItems":
        return True
    if keyword == "dependentSchemas":
        return all(map(always_holds, value.values()))
    if keyword == "propertyNames":
        return always_holds(value)
    return False


def _unique(base: Alternative) -> bool:
    """Whether `base` asks for unique elements (then no array asked for repeats one)."""
    return any(isinstance(b.schema, dict) and b.schema.get("uniqueItems") is True for b in base)


def _unequal(lw: "Lowerer", s: Sub, values: list, kind: str) -> list[Alternative]:
    """The containers of `kind` equal to none of `values` (a union of conjunctions)."""
    out: list[Alternative] = [[]]
    texts = {json.dumps(v, sort_keys=True): v for v in values}  # equal values: one constraint
    for text, value in texts.items():
        def way(name: tuple, make) -> list[Sub]:  # one per value and way, whoever asks
            return [lw.expander.synthetic(("unequal", kind, text) + name, s, make)]
        if kind == "object":
            ways = [way(("absent", k), lambda k=k: {"properties": {k: False}}) for k in value]
            ways += [way(("differs", k), lambda k=k, v=v: {
                "required": [k], "properties": {k: negated({"const": v})}})
                for k, v in value.items()]
            ways.append(way(("more",), lambda n=len(value): {"minProperties": n + 1}))
        else:
            prefix_kw = prefix_keyword(lw)
            ways = [way(("differs", i), lambda i=i, v=v: {
                "minItems": i + 1, prefix_kw: [True] * i + [negated({"const": v})]})
                for i, v in enumerate(value)]
            ways.append(way(("more",), lambda n=len(value): {"minItems": n + 1}))
            if value:
                ways.append(way(("fewer",), lambda n=len(value): {"maxItems": n - 1}))
        out = conjunctions(out, ways, s.pointer, kind)
    return out
