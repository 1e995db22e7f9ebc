"""The containers a subschema rejects, negated factor by factor: not (A and B) = not A or not B.

The expansion multiplies a schema's applicators out into a union of conjunctions, and the
complement of a union is the product, over its alternatives, of the ways to violate each: its
size is the product of theirs, though most alternatives repeat the same keywords (a ``oneOf`` of
two beside a ``dependencies`` whose value is a ``oneOf`` of three: 2 x 4 alternatives, each with
a dozen ways to fail, and the product passes any budget).  Negating the conjunction as the schema
writes it instead keeps it a union of the complements of its factors, whose sizes add:

* the schema's own keywords (`violations.expanded_violations` of the bare subschema);
* ``$ref`` (its target alone where the draft ignores the siblings) and each ``allOf`` member,
  recursively;
* ``anyOf``: every branch violated (a product, of each branch's factored complement);
* ``if``: (if and not then) or (not if, and not else);
* ``oneOf`` and the dependency keywords: the product over their expanded alternatives, which
  `one_of.resolve_one_of` and `dependencies.dependency_alternatives` build beside the schema's
  own keywords (so what the siblings rule out is left out, as in the expansion), or, where a
  required member tells them apart, a union over its values (`discriminated`).

A subschema with a dynamic reference, an ``unevaluated*`` keyword that sees its applicators'
annotations, or a ``$ref`` cycle is negated as a whole (`expanded_violations`), as before.
"""
from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from formwork.grammar.budget import CompileCancelledError
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.json_schema.dependencies import DEPENDENCY_KEYWORDS, dependency_alternatives
from formwork.grammar.json_schema.discriminated import discriminated_violations
from formwork.grammar.json_schema.expand import Alternative, Sub
from formwork.grammar.json_schema.one_of import resolve_one_of
from formwork.grammar.json_schema.unevaluated import UNEVALUATED, plain_unevaluated
from formwork.grammar.json_schema.violations import (
    conjunctions, expanded_violations, minimal, violations_of,
)

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

_FACTORED = frozenset({"$ref", "allOf", "anyOf", "oneOf", "if", "then", "else",
                       *DEPENDENCY_KEYWORDS})


def container_violations(lw: "Lowerer", target: Sub, kind: str, base: Alternative = ()
                         ) -> list[Alternative]:
    """The containers of `kind` that `target` rejects, as alternatives (conjunctions of
    synthetic or user subschemas); `base`: subschemas every container asked for satisfies too
    (the positive keywords beside the ``not``), so that ways to violate that they rule out are
    dropped.  Where the factors split past the alternatives budget (products of nested oneOfs
    can), the whole-schema expansion, exact too, gets its chance before the refusal."""
    try:
        return _violations(lw, target, kind, tuple(base), ())
    except GrammarBudgetError as factored_error:
        if isinstance(factored_error, CompileCancelledError) or "alternatives" not in str(factored_error):
            raise
        try:
            return expanded_violations(lw, target, kind, base)
        except GrammarBudgetError:
            raise factored_error from None


def _violations(lw: "Lowerer", sub: Sub, kind: str, base: Alternative, refs: tuple[int, ...]
                ) -> list[Alternative]:
    schema = sub.schema
    if schema is True:
        return []
    if schema is False:
        return [[]]
    if not isinstance(schema, dict) or _FACTORED.isdisjoint(schema) or not _factorable(schema):
        return expanded_violations(lw, sub, kind, base)
    ex = lw.expander
    if "$ref" in schema:
        target = ex.resolve(sub)
        if isinstance(target.schema, dict) and id(target.schema) in refs:  # a cycle: the
            return expanded_violations(lw, sub, kind, base)  # expansion names it
        ref_part = _violations(lw, target, kind, base, refs + (id(target.schema),))
        if ex.ref_overrides_siblings:
            return ref_part
        parts = [ref_part]
    else:
        parts = []
    parts.append(violations_of(lw, [sub], kind, base))  # the schema's own keywords
    parts += [_violations(lw, ex.child(sub, "allOf", i), kind, base, refs)
              for i, _ in enumerate(schema.get("allOf", ()))]
    if "anyOf" in schema:
        every: list[Alternative] = [[]]
        for i, _ in enumerate(schema["anyOf"]):
            branch = _violations(lw, ex.child(sub, "anyOf", i), kind, base, refs)
            every = conjunctions(every, branch, sub.pointer, kind, base)
            if not every:
                break
        parts.append(every)
    if "if" in schema and ("then" in schema or "else" in schema):
        parts.append(_conditional(lw, sub, kind, base, refs))
    one_of = partial(resolve_one_of, lw)
    if "oneOf" in schema:
        branches = [lw.expand(ex.child(sub, "oneOf", i)) for i, _ in enumerate(schema["oneOf"])]
        parts.append(_product_violations(lw, sub, one_of(sub, branches), kind, base))
    if not set(DEPENDENCY_KEYWORDS).isdisjoint(schema):
        parts.append(_product_violations(lw, sub, dependency_alternatives(ex, sub, one_of, refs),
                                         kind, base))
    return minimal((conj for part in parts for conj in part), sub.pointer, kind, base)


def _factorable(schema: dict) -> bool:
    """Whether `schema`'s applicators may be negated one by one: no dynamic reference, and no
    ``unevaluated*`` keyword that sees their annotations."""
    return "$dynamicRef" not in schema and all(
        k not in schema or plain_unevaluated(schema, k) for k in UNEVALUATED)


def _conditional(lw: "Lowerer", sub: Sub, kind: str, base: Alternative, refs: tuple[int, ...]
                 ) -> list[Alternative]:
    """The containers violating ``if``/``then``/``else``: if and not then, or not if and not
    else."""
    ex = lw.expander
    cond = ex.child(sub, "if")
    out: list[Alternative] = []
    if "then" in sub.schema:
        then = _violations(lw, ex.child(sub, "then"), kind, base, refs)
        out += conjunctions(lw.expand(cond), then, sub.pointer, kind, base)
    if "else" in sub.schema:
        out += conjunctions([[ex.negation(sub, cond, "if")]],
                            _violations(lw, ex.child(sub, "else"), kind, base, refs),
                            sub.pointer, kind, base)
    return out


def _product_violations(lw: "Lowerer", sub: Sub, alternatives: list[Alternative], kind: str,
                        base: Alternative) -> list[Alternative]:
    """The containers outside every one of `alternatives` (a union made for `sub`): split by a
    discriminating member's value where there is one (`discriminated`)."""
    if kind == "object":
        split = discriminated_violations(lw, sub, alternatives, base)
        if split is not None:
            return split
    out: list[Alternative] = [[]]
    for a in alternatives:
        out = conjunctions(out, violations_of(lw, a, kind, base), sub.pointer, kind, base)
        if not out:
            break
    return out
