"""``dependentRequired``, ``dependentSchemas`` and draft-04..07 ``dependencies``, as alternatives.

A dependency on a trigger key ``k`` holds when ``k`` is absent, or when it is present together with
what it requires.  Each dependency therefore expands into two disjoint alternatives: the object
without ``k`` (``properties: {k: false}``) and the object with it (``required: [k, ...names]``,
and the dependent subschema).  Non-objects satisfy both.  The object lowering merges each
alternative into one member order, so this is exact; it doubles the alternatives per trigger, so
more than `MAX_DEPENDENCY_KEYS` triggers in one schema object are refused.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.schemas.drafts import draft_of
from formwork.schemas.errors import SchemaError
from formwork.schemas.keywords import DRAFT_KEYWORDS
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.expand import Alternative, Expander, OneOfResolver, Sub

MAX_DEPENDENCY_KEYS = 5
DEPENDENCY_KEYWORDS = ("dependentRequired", "dependentSchemas", "dependencies")


def dependency_alternatives(ex: "Expander", sub: "Sub", one_of: "OneOfResolver",
                            refs: tuple[int, ...]) -> list["Alternative"]:
    """The alternatives equivalent to the dependency keywords of `sub`: those of the draft its
    schema object declares with `$schema`, else all of them, whatever the document's draft (a
    `$ref` may enter a resource of another draft, and honouring a keyword is never the unsound
    side; one of none of the drafts in scope is reported by the schema front end)."""
    schema = sub.schema
    known = _declared_keywords(schema)
    triggers: list[tuple[str, str, Any]] = [
        (kw, key, value) for kw in DEPENDENCY_KEYWORDS if kw in schema and (known is None or kw in known)
        for key, value in schema[kw].items()]
    if len(triggers) > MAX_DEPENDENCY_KEYS:
        kw = triggers[0][0]
        raise GrammarBudgetError(
            f"{kw} at {child(sub.pointer, kw)}: {len(triggers)} dependency keys in one schema "
            f"object would expand into {2 ** len(triggers)} alternatives (one per combination of "
            f"present and absent keys); at most {MAX_DEPENDENCY_KEYS} keys are enforced")
    alts: list[Alternative] = [[]]
    for kw, key, value in triggers:
        label = (kw, child(sub.pointer, kw, key))
        absent = ex.synthetic(("dependency absent", id(schema), kw, key), sub,
                              lambda k=key: {"properties": {k: False}}, label)
        names = list(value) if isinstance(value, list) else []
        present = [[ex.synthetic(("dependency present", id(schema), kw, key), sub,
                                 lambda k=key, n=names: {"required": [k, *n]}, label)]]
        if not isinstance(value, list):
            present = ex._product(present, ex.expand(ex.child(sub, kw, key), one_of, refs), sub)
        alts = ex._product(alts, [[absent], *present], sub)
    return alts


def _declared_keywords(schema: dict) -> Optional[frozenset[str]]:
    """The keywords of the draft `schema` declares with its own `$schema` (None: none declared,
    or a draft without its own keyword table)."""
    if "$schema" not in schema:
        return None
    try:
        return DRAFT_KEYWORDS.get(draft_of(schema, None).name)
    except SchemaError:
        return None
