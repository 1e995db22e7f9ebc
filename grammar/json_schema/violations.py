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
with the reason.
"""
from __future__ import annotations

import itertools
import json
from itertools import product
from typing import TYPE_CHECKING, Any, Iterable, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.json_schema.expand import (
    APPLICATORS, MAX_ALTERNATIVES, WITNESS, Alternative, Sub, Synthetic,
)
from formwork.grammar.json_schema.unevaluated import plain_unevaluated
from formwork.grammar.json_schema.witnesses import Witness
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
#: Prefix positions past which `items` has no complement (2**n schemas).
MAX_DECLARED = 5
#: Drafts whose `items` may be a list of positional schemas.
_ITEMS_LIST_DRAFTS = frozenset({"draft-07", "draft-06", "draft-04", "2019-09"})


class CannotNegate(Exception):
    """Why a complement cannot be built exactly (turned into a schema error by `refuse`)."""


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
                          if _schema_of(v) is False)
            required.update(schema.get("required", ()))
            if _additional(schema) is False and not schema.get("patternProperties"):
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
        ors.extend(_object_violations(lw, s) if kind == "object" else
                   _array_violations(lw, s, _unique(base)))
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
    """Whether `keyword` of `schema` constrains nothing here: true or empty subschemas, or an
    ``unevaluatedItems`` the expansion's marks carry or the violations below take."""
    value = _schema_of(schema[keyword])
    if keyword == "unevaluatedItems":
        return True
    if keyword == "dependentSchemas":
        return all(_schema_of(v) is True or _schema_of(v) == {} for v in value.values())
    if keyword == "propertyNames":
        return value is True or value == {}
    return False


def _synthetic(lw: "Lowerer", s: Sub, key: tuple, make) -> list[Sub]:
    return [lw.expander.synthetic((id(s.schema), s.pointer) + key, s, make)]


def _shared(lw: "Lowerer", s: Sub, key: tuple, make) -> list[Sub]:
    """A synthetic subschema that every `s` in the same scope shares for `key` (which spells
    out all it holds): violations of equal keywords in sibling branches are one subschema, so
    a conjunction of complements drops the repeats."""
    return [lw.expander.synthetic(("shared", id(s.resolver)) + key, s, make)]


def _same(value: Sub) -> tuple:
    """A key that equal user subschemas in one scope share (their text and resolver); any
    other subschema's is its identity."""
    if type(value.schema) is dict or isinstance(value.schema, bool):
        return ("text", repr(value.schema), id(value.resolver))
    return ("id", id(value.schema), value.pointer)


def _negated(target: Any) -> Synthetic:
    """``{"not": target}`` (a `Sub`, or a plain schema)."""
    return Synthetic({"not": target})


def _object_violations(lw: "Lowerer", s: Sub) -> list[Alternative]:
    schema = s.schema
    out: list[Alternative] = []
    for name in schema.get("required", ()):
        out.append(_shared(lw, s, ("object", "absent", name),
                           lambda name=name: {"properties": {name: False}}))
    for name, value in lw.expander.members(s, "properties"):
        if value.schema is True or value.schema == {}:
            continue
        out.append(_shared(lw, s, ("object", "bad", name, _same(value)),
                           lambda name=name, value=value: {
                               "required": [name], "properties": {name: _negated(value)}}))
    out.extend(_member_witnesses(lw, s))
    if schema.get("minProperties", 0) > 0:
        n = int(schema["minProperties"])
        out.append(_shared(lw, s, ("object", "fewer", n), lambda: {"maxProperties": n - 1}))
    if "maxProperties" in schema:
        n = int(schema["maxProperties"])
        out.append(_shared(lw, s, ("object", "more", n), lambda: {"minProperties": n + 1}))
    return out


def _additional(schema: dict) -> Any:
    """The schema of the members `schema` does not declare: ``additionalProperties``, or a plain
    ``unevaluatedProperties`` (which acts as it), or None."""
    if "additionalProperties" in schema:
        return _schema_of(schema["additionalProperties"])
    if plain_unevaluated(schema, "unevaluatedProperties"):
        return _schema_of(schema["unevaluatedProperties"])
    return None


def _schema_of(value: Any) -> Any:
    """A subschema's schema, whether a synthetic schema holds it as a `Sub` or not."""
    return value.schema if isinstance(value, Sub) else value


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
    additional = _additional(schema)
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
    return _shared(lw, s, ("outside", _same(value)), lambda: {"not": value})[0]


def _witness(lw: "Lowerer", s: Sub, value: Sub, witness: Witness) -> list[Sub]:
    return _shared(lw, s, ("object", "witness", *witness[:3], _same(value)),
                   lambda: {WITNESS: witness})


def _prefix_keyword(lw: "Lowerer") -> str:
    return "items" if lw.doc.draft.name in _ITEMS_LIST_DRAFTS else "prefixItems"


def _unique(base: Alternative) -> bool:
    """Whether `base` asks for unique elements (then no array asked for repeats one)."""
    return any(isinstance(b.schema, dict) and b.schema.get("uniqueItems") is True for b in base)


def _array_violations(lw: "Lowerer", s: Sub, unique: bool) -> list[Alternative]:
    """The ways an array violates `s`; `unique`: the arrays asked for have unique elements, so
    none violates ``uniqueItems``."""
    schema = s.schema
    out: list[Alternative] = []
    prefix_kw = _prefix_keyword(lw)
    prefix = schema.get(prefix_kw)
    if prefix_kw == "items" and not isinstance(prefix, list):
        prefix = None
    for i, _ in enumerate(prefix or ()):
        item = lw.expander.child(s, prefix_kw, i)
        if item.schema is True or item.schema == {}:
            continue
        out.append(_synthetic(lw, s, ("array", "bad item", i), lambda i=i, item=item: {
            "minItems": i + 1, prefix_kw: [True] * i + [_negated(item)]}))
    rest_kw = "additionalItems" if prefix_kw == "items" and prefix is not None else "items"
    rest = _schema_of(schema.get(rest_kw))
    if rest_kw == "items" and isinstance(rest, list):
        rest = None
    if rest is None and plain_unevaluated(schema, "unevaluatedItems"):  # acts as `items`
        rest_kw, rest = "unevaluatedItems", _schema_of(schema["unevaluatedItems"])
    if rest is not None and rest is not True and rest != {}:
        if rest is False:  # violated by one element past the prefix
            n = len(prefix or ())
            out.append(_synthetic(lw, s, ("array", "longer",), lambda: {"minItems": n + 1}))
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
        out.append(_synthetic(lw, s, ("array", "fewer",), lambda: {"maxItems": n - 1}))
    if "maxItems" in schema:
        n = int(schema["maxItems"])
        out.append(_synthetic(lw, s, ("array", "more",), lambda: {"minItems": n + 1}))
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
    prefix_kw = _prefix_keyword(lw)

    def make(bad: tuple[bool, ...]) -> dict:
        schema: dict[str, Any] = {"contains": _negated(rest)}
        if k:
            schema[prefix_kw] = [_negated(rest) if b else rest for b in bad]
        if any(bad):
            schema["minContains"] = sum(bad) + 1
        return schema
    return [_synthetic(lw, s, ("array", "bad element", bad), lambda bad=bad: make(bad))
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
        out.append(_synthetic(lw, s, ("array", "none match"), lambda: {"items": _negated(target)}))
    elif low > 1:
        out.append(_synthetic(lw, s, ("array", "too few match"), lambda: {
            "contains": target, "minContains": 0, "maxContains": low - 1}))
    if high is not None:
        out.append(_synthetic(lw, s, ("array", "too many match"), lambda: {
            "contains": target, "minContains": int(high) + 1}))
    return out


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
                "required": [k], "properties": {k: _negated({"const": v})}})
                for k, v in value.items()]
            ways.append(way(("more",), lambda n=len(value): {"minProperties": n + 1}))
        else:
            prefix_kw = _prefix_keyword(lw)
            ways = [way(("differs", i), lambda i=i, v=v: {
                "minItems": i + 1, prefix_kw: [True] * i + [_negated({"const": v})]})
                for i, v in enumerate(value)]
            ways.append(way(("more",), lambda n=len(value): {"minItems": n + 1}))
            if value:
                ways.append(way(("fewer",), lambda n=len(value): {"maxItems": n - 1}))
        out = conjunctions(out, ways, s.pointer, kind)
    return out
