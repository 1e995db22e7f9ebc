"""The `const`/`enum` values of a conjunction that its other subschemas accept (`jsonschema`'s
verdict, a type-only subschema decided by the type checker)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from formwork.grammar.json_schema.expand import APPLICATORS, NEUTRAL_KEYWORDS, WITNESS, Sub, Synthetic

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

_LOCAL_FREE = NEUTRAL_KEYWORDS | set(APPLICATORS)


def values_allowed(lw: "Lowerer", values: list[Any], owner: Sub, keyword: str, subs: list[Sub]
                   ) -> list[Any]:
    """The `const`/`enum` `values` of `owner` that every subschema in `subs` accepts.

    A subschema whose only constraint is `type` (keywords jsonschema ignores aside, and for
    `owner` the `keyword` its values come from, which they satisfy) is decided with the
    validator's type checker; any other is asked to jsonschema, one validator per subschema
    (`Lowerer._validator`), `owner` without `keyword` (an enum checked against itself is quadratic).
    """
    is_type = lw.doc.draft.validator.TYPE_CHECKER.is_type
    known = lw.doc.draft.validator.VALIDATORS
    type_lists: list[list[str]] = []
    others: list[Any] = []
    for o in subs:
        rest = {k for k in o.schema.keys() - _LOCAL_FREE - {"type"} if k in known or k == WITNESS}
        if o is owner:
            rest.discard(keyword)
        if rest:
            local = o.local()
            if o is owner:
                local = _without(local, keyword)
            others.append(lw._validator(local))
        elif "type" in o.schema:
            t = o.schema["type"]
            type_lists.append([t] if isinstance(t, str) else list(t))
    return [v for v in values
            if all(any(is_type(v, t) for t in types) for types in type_lists)
            and all(validator.is_valid(v) for validator in others)]


def _without(sub: Sub, keyword: str) -> Sub:
    """`sub` (a local subschema) without `keyword`."""
    kept = {k: v for k, v in sub.schema.items() if k != keyword}
    if isinstance(sub.schema, Synthetic):
        kept = Synthetic(kept, sub.schema.label)
    return Sub(kept, sub.resolver, sub.pointer, sub.exclude)
