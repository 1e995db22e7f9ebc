"""Subschemas with their reference context, and the expansion of a schema into alternatives.

A schema is expanded into a disjunction of conjunctions (`list[list[Sub]]`): ``$ref`` adds its
target to the conjunction, ``allOf`` adds every branch, ``anyOf``/``oneOf`` multiply the
alternatives.  The keywords left inside each `Sub` ("local" keywords: type, properties, ...) are
merged per alternative by the lowering.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

from formwork.grammar.errors import GrammarBudgetError, RecursionNotSupportedError
from formwork.grammar.json_schema.errors import InvalidSchemaError
from formwork.schemas.errors import SchemaError
from formwork.schemas.pointer import child

MAX_ALTERNATIVES = 256

#: Keywords consumed by the expansion; everything else is "local".
APPLICATORS = ("$ref", "allOf", "anyOf", "oneOf")
_APPLICATOR_SET = frozenset(APPLICATORS)


@dataclass(eq=False, slots=True)
class Sub:
    """A subschema, the `referencing` resolver in scope for it (None: the root document's, made
    only if a `$ref` needs it), and its JSON pointer (never changed once made; not frozen, as a
    frozen dataclass is slower to make)."""

    schema: Any
    resolver: Any
    pointer: str
    #: IR languages the value must NOT spell (set on the synthetic members `oneOf` adds)
    exclude: tuple = ()

    def local(self) -> "Sub":
        """The same subschema without its applicator keywords."""
        if not isinstance(self.schema, dict):
            return self
        return Sub({k: v for k, v in self.schema.items() if k not in APPLICATORS},
                   self.resolver, self.pointer)


Alternative = list[Sub]

# In-place applicators whose annotations `unevaluated*` would have to collect.
_ANNOTATING = ("allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "if", "then", "else",
               "dependentSchemas", "contains", "not")


def plain_unevaluated(schema: Any, keyword: str) -> bool:
    """True when `keyword` (unevaluatedProperties/unevaluatedItems) in `schema` sees only the
    annotations of the same object's properties/patternProperties/prefixItems: it then acts
    exactly like additionalProperties / items."""
    return isinstance(schema, dict) and keyword in schema and \
        not any(k in schema for k in _ANNOTATING)
OneOfResolver = Callable[[Sub, list[list[Alternative]]], list[Alternative]]


class Expander:
    """Expands subschemas of one document (`formwork.schemas.SchemaDocument`).

    It keeps no reference to its caller (the `oneOf` resolver is an argument of `expand`), so a
    lowering leaves no reference cycle behind: its objects die by reference counting, not by a
    pass of the cyclic garbage collector."""

    def __init__(self, doc: Any, ref_overrides_siblings: bool):
        self.doc = doc
        self.ref_overrides_siblings = ref_overrides_siblings

    def root(self) -> Sub:
        return Sub(self.doc.schema, self.doc.enter(self.doc.schema, None), "")  # None: the root's resolver

    def child(self, parent: Sub, *tokens: Any) -> Sub:
        """The subschema at `tokens` below `parent` (entering its `$id` scope, if any)."""
        schema = parent.schema
        for token in tokens:
            schema = schema[token]
        return Sub(schema, self.doc.enter(schema, parent.resolver), child(parent.pointer, *tokens))

    def members(self, parent: Sub, keyword: str) -> list[tuple[str, Sub]]:
        """(name, subschema) for each member of the map `keyword` of `parent` (`properties`,
        `patternProperties`), in order: `child(parent, keyword, name)` for each name."""
        members = parent.schema.get(keyword)
        if not members:
            return []
        enter, resolver = self.doc.enter, parent.resolver
        prefix = child(parent.pointer, keyword)
        return [(name, Sub(schema, enter(schema, resolver), child(prefix, name)))
                for name, schema in members.items()]

    def resolve(self, sub: Sub) -> Sub:
        ref = sub.schema["$ref"]
        try:
            target, resolver, pointer = self.doc.lookup(ref, sub.resolver)
        except SchemaError as exc:
            raise InvalidSchemaError("$ref", child(sub.pointer, "$ref"), str(exc)) from None
        return Sub(target, self.doc.enter(target, resolver), pointer)

    def expand(self, sub: Sub, one_of: OneOfResolver, refs: tuple[int, ...] = ()) -> list[Alternative]:
        """The alternatives (each a conjunction of subschemas) equivalent to `sub`; `one_of`
        turns the expanded branches of a `oneOf` into alternatives."""
        schema = sub.schema
        if schema is True:
            return [[]]
        if schema is False:
            return []
        alts: list[Alternative] = [[sub]]
        if _APPLICATOR_SET.isdisjoint(schema):  # the usual subschema: nothing to expand
            return alts
        if "$ref" in schema:
            target = self.resolve(sub)
            key = id(target.schema)
            if isinstance(target.schema, dict) and key in refs:
                raise RecursionNotSupportedError(
                    f"$ref at {child(sub.pointer, '$ref')} forms a cycle back to "
                    f"{target.pointer or '#'} through $ref/allOf/anyOf/oneOf alone, without an object or "
                    "array in between, so it never constrains a value")
            expanded = self.expand(target, one_of, refs + (key,))
            if self.ref_overrides_siblings:
                return expanded
            alts = self._product(alts, expanded, sub)
        for i, _ in enumerate(schema.get("allOf", ())):
            alts = self._product(alts, self.expand(self.child(sub, "allOf", i), one_of, refs), sub)
        if "anyOf" in schema:
            union = [a for i, _ in enumerate(schema["anyOf"])
                     for a in self.expand(self.child(sub, "anyOf", i), one_of, refs)]
            alts = self._product(alts, union, sub)
        if "oneOf" in schema:
            branches = [self.expand(self.child(sub, "oneOf", i), one_of, refs)
                        for i, _ in enumerate(schema["oneOf"])]
            alts = self._product(alts, one_of(sub, branches), sub)
        return alts

    @staticmethod
    def _product(left: list[Alternative], right: list[Alternative], sub: Sub) -> list[Alternative]:
        if len(left) * len(right) > MAX_ALTERNATIVES:
            raise GrammarBudgetError(
                f"the schema at {sub.pointer or '#'} expands into more than {MAX_ALTERNATIVES} "
                "alternatives (allOf/anyOf/oneOf combinations)")
        return [a + b for a, b in product(left, right)]
