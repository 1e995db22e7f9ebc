"""Subschemas with their reference context, and the expansion of a schema into alternatives.

A schema is expanded into a disjunction of conjunctions (`list[list[Sub]]`): ``$ref`` adds its
target to the conjunction, ``allOf`` adds every branch, ``anyOf``/``oneOf`` multiply the
alternatives, ``if``/``then``/``else`` becomes (if and then) or (not if, and else), and each
dependency (``dependentRequired``, ...) its trigger key absent or present (`dependencies`).  The
keywords left inside each `Sub` ("local" keywords: type, properties, ``not``, ...) are merged per
alternative by the lowering.

The lowering of ``not`` (`negation.py`) and of ``if`` make subschemas of their own: `Synthetic`
schema objects, which may hold `Sub`s where a schema holds subschemas (``child`` and ``members``
hand those back as they are, so their pointers stay those of the user's schema).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

from formwork.grammar.budget import COARSE_EVERY, active_budget
from formwork.grammar.errors import GrammarBudgetError, RecursionNotSupportedError
from formwork.grammar.json_schema.dependencies import DEPENDENCY_KEYWORDS, dependency_alternatives
from formwork.grammar.json_schema.discriminators import consistent
from formwork.grammar.json_schema.errors import InvalidSchemaError
from formwork.grammar.json_schema.unevaluated import UNEVALUATED, plain_unevaluated, with_evaluated
from formwork.schemas.errors import SchemaError
from formwork.schemas.keywords import ANNOTATION_KEYWORDS, DRAFT_KEYWORDS, UNSUPPORTED_KEYWORDS
from formwork.schemas.pointer import child

MAX_ALTERNATIVES = 256
_PRUNED_FACTOR = 8  # a product this many times larger is still made, and its empty ones dropped
#: Alternatives a product of one alternative with a list may give: the list's, as many as the
#: schema spells out (an anyOf of hundreds of consts), so they grow with the schema, not past it.
MAX_LISTED_ALTERNATIVES = 4096

#: Keywords consumed by the expansion; everything else is "local".
APPLICATORS = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "if", "then", "else", *DEPENDENCY_KEYWORDS)
_APPLICATOR_SET = frozenset(APPLICATORS)
_DEPENDENCY_SET = frozenset(DEPENDENCY_KEYWORDS)
_UNEVALUATED_SET = frozenset(UNEVALUATED)
#: Keywords `Expander.expand` acts on: a subschema holding none expands to itself.
EXPANDED_KEYWORDS = _APPLICATOR_SET | _UNEVALUATED_SET
#: Keywords that do not constrain the instance (by the time applicators are expanded).
NEUTRAL_KEYWORDS = ANNOTATION_KEYWORDS | {"$schema", "$id", "$anchor", "$dynamicAnchor", "$defs",
                                          "definitions", "$comment"}
#: The keyword of a synthetic schema whose value (a `witnesses.Witness`) asks an object for some
#: member of a kind: the complement of ``additionalProperties``/``patternProperties``.
WITNESS = "$formwork:witness"
#: Every key the lowering reads in a schema object: the keywords of the drafts it compiles (older
#: ones are translated to them), those it refuses, and its synthetic schemas' own.  JSON Schema
#: ignores any other key (webpack's ``instanceof``, VS Code's ``markdownDescription``, OpenAPI's
#: ``x-`` extensions), and so does the lowering.
KNOWN_KEYWORDS = frozenset().union(*DRAFT_KEYWORDS.values(), UNSUPPORTED_KEYWORDS, APPLICATORS,
                                   UNEVALUATED, {"additionalItems", WITNESS})
#: Keywords that constrain an instance: a schema object with none of them accepts every value.
CONSTRAINING_KEYWORDS = KNOWN_KEYWORDS - NEUTRAL_KEYWORDS
#: ... once its applicators are expanded (the other subschemas of its conjunction stand for them)
LOCAL_CONSTRAINING_KEYWORDS = CONSTRAINING_KEYWORDS - _APPLICATOR_SET


def constrains(schema: dict) -> bool:
    """Whether the schema object rejects some value (a keyword of `CONSTRAINING_KEYWORDS`)."""
    return not CONSTRAINING_KEYWORDS.isdisjoint(schema)


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
        kept = {k: v for k, v in self.schema.items() if k not in APPLICATORS and not (
            k in _UNEVALUATED_SET and not plain_unevaluated(self.schema, k))}  # they see those
        if isinstance(self.schema, Synthetic):
            kept = Synthetic(kept, self.schema.label)
        return Sub(kept, self.resolver, self.pointer)


Alternative = list[Sub]


class Synthetic(dict):
    """A schema object made by the lowering (never by the user): its subschemas may be `Sub`s.
    `label` is (keyword, pointer) of the user's keyword it stands for (its refusals name them)."""

    __slots__ = ("label",)

    def __init__(self, items: dict, label: tuple[str, str] | None = None):
        super().__init__(items)
        self.label = label


def plain_schema(schema: Any) -> Any:
    """`schema` as plain JSON for `jsonschema`: each `Sub` inside a `Synthetic` replaced by its
    schema (a synthetic subschema always sits in the scope of the schema that made it)."""
    if isinstance(schema, Sub):
        return plain_schema(schema.schema)
    if isinstance(schema, Synthetic):
        plain = {k: _plain_value(v) for k, v in schema.items() if k != WITNESS}
        return {"allOf": [plain, schema[WITNESS].plain()]} if WITNESS in schema else plain
    return schema


def _plain_value(value: Any) -> Any:
    if isinstance(value, (Sub, Synthetic)):
        return plain_schema(value)
    if isinstance(value, dict):
        return {k: _plain_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_value(v) for v in value]
    return value

OneOfResolver = Callable[[Sub, list[list[Alternative]]], list[Alternative]]


def _always_holds(alternative: Alternative) -> bool:
    """Whether every instance satisfies the expanded conjunction (each subschema `true`, or with
    only annotations, keys JSON Schema ignores and expanded applicators: ``{"$ref": ...}`` beside
    a target of annotations only)."""
    return all(s.schema is True or (isinstance(s.schema, dict) and not s.exclude and
                                    LOCAL_CONSTRAINING_KEYWORDS.isdisjoint(s.schema)) for s in alternative)


class Expander:
    """Expands subschemas of one document (`formwork.schemas.SchemaDocument`).

    It keeps no reference to its caller (the `oneOf` resolver is an argument of `expand`), so a
    lowering leaves no reference cycle behind: its objects die by reference counting, not by a
    pass of the cyclic garbage collector."""

    def __init__(self, doc: Any, ref_overrides_siblings: bool):
        self.doc = doc
        self.ref_overrides_siblings = ref_overrides_siblings
        # synthetic subschemas by what they stand for: the lowering's memos key conjunctions by
        # the identity of their schemas, so each is made once and lives as long as the lowering
        self._synthetic: dict[tuple, Sub] = {}
        self._owners: list[Any] = []  # the schemas keys name by id, kept alive with them
        self._annotating = 0  # expansions in progress under a non-plain unevaluated* keyword
        self._budget = active_budget()  # the compile's, which `check_budget` would find (or None)

    def synthetic(self, key: tuple, owner: Sub, make: Callable[[], dict],
                  label: tuple[str, str] | None = None) -> Sub:
        """The synthetic subschema `make()` in the scope of `owner` (made once per `key`)."""
        got = self._synthetic.get(key)
        if got is None:
            got = self._synthetic[key] = Sub(Synthetic(make(), label), owner.resolver, owner.pointer)
            self._owners.append(owner.schema)
        return got

    def negation(self, owner: Sub, target: Sub, keyword: str) -> Sub:
        """A subschema that holds where `target` (a subschema of `owner`) does not: ``not`` made
        for `keyword` (``if``, ``oneOf``), which its refusals name with `target`'s pointer."""
        return self.synthetic(("not", id(target.schema), keyword, target.pointer), owner,
                              lambda: {"not": target}, (keyword, target.pointer))

    def root(self) -> Sub:
        return Sub(self.doc.schema, self.doc.enter(self.doc.schema, None), "")  # None: the root's resolver

    def child(self, parent: Sub, *tokens: Any) -> Sub:
        """The subschema at `tokens` below `parent` (entering its `$id` scope, if any)."""
        schema = parent.schema
        for token in tokens:
            schema = schema[token]
        if type(schema) is Sub:  # held by a synthetic schema
            return schema
        resolver = parent.resolver  # `doc.enter`'s common case inline (as in `members`)
        if type(schema) is not dict or "$id" in schema or "$schema" in schema:
            resolver = self.doc.enter(schema, resolver)
        return Sub(schema, resolver, child(parent.pointer, *tokens))

    def members(self, parent: Sub, keyword: str) -> list[tuple[str, Sub]]:
        """(name, subschema) for each member of the map `keyword` of `parent` (`properties`,
        `patternProperties`), in order: `child(parent, keyword, name)` for each name."""
        members = parent.schema.get(keyword)
        if not members:
            return []
        enter, resolver = self.doc.enter, parent.resolver
        prefix = child(parent.pointer, keyword)
        # inline, the common cases of `enter` (no `$id`/`$schema`: the same resolver) and of
        # `child` (a name with no character to escape): no call a member
        return [(name, schema if type(schema) is Sub else Sub(
                    schema,
                    resolver if type(schema) is dict and "$id" not in schema and "$schema" not in schema
                    else enter(schema, resolver),
                    prefix + "/" + name if "~" not in name and "/" not in name else child(prefix, name)))
                for name, schema in members.items()]

    def resolve(self, sub: Sub, keyword: str = "$ref") -> Sub:
        """The target of `sub`'s `$ref` (or `$dynamicRef`, where it is static)."""
        try:
            target, resolver, pointer = self.doc.lookup(sub.schema[keyword], sub.resolver,
                                                        dynamic=keyword == "$dynamicRef")
        except SchemaError as exc:
            raise InvalidSchemaError(keyword, child(sub.pointer, keyword), str(exc)) from None
        return Sub(target, self.doc.enter(target, resolver), pointer)

    def expand(self, sub: Sub, one_of: OneOfResolver, refs: tuple[int, ...] = ()) -> list[Alternative]:
        """The alternatives (each a conjunction of subschemas) equivalent to `sub`; `one_of`
        turns the expanded branches of a `oneOf` into alternatives."""
        schema = sub.schema
        if schema is True:
            return [[]]
        if schema is False:
            return []
        if self._budget is not None:
            self._budget.tick("expanding $ref/allOf/anyOf/oneOf", COARSE_EVERY)
        if EXPANDED_KEYWORDS.isdisjoint(schema):
            # the usual subschema: nothing to expand
            return [[sub]]
        if any(k in schema and not plain_unevaluated(schema, k) for k in UNEVALUATED):
            # the branches' annotations count for this keyword: keep every anyOf branch
            self._annotating += 1
            try:
                return self._expand_applicators(sub, one_of, refs)
            finally:
                self._annotating -= 1
        return self._expand_applicators(sub, one_of, refs)

    def _expand_applicators(self, sub: Sub, one_of: OneOfResolver, refs: tuple[int, ...]) -> list[Alternative]:
        schema = sub.schema
        alts: list[Alternative] = [[sub]]
        ref_keyword = "$ref" if "$ref" in schema else "$dynamicRef" if "$dynamicRef" in schema else None
        if ref_keyword is not None:
            target = self.resolve(sub, ref_keyword)
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
            if not self._annotating and any(map(_always_holds, union)):
                union = [[]]  # a branch every instance takes: the union is everything
            alts = self._product(alts, union, sub)
        if "oneOf" in schema:
            branches = [self.expand(self.child(sub, "oneOf", i), one_of, refs)
                        for i, _ in enumerate(schema["oneOf"])]
            alts = self._product(alts, one_of(sub, branches), sub)
        if "if" in schema and ("then" in schema or "else" in schema):
            alts = self._product(alts, self._conditional(sub, one_of, refs), sub)
        if not _DEPENDENCY_SET.isdisjoint(schema):
            alts = self._product(alts, dependency_alternatives(self, sub, one_of, refs), sub)
        if not _UNEVALUATED_SET.isdisjoint(schema):
            alts = with_evaluated(self, sub, alts, one_of, refs)
        return alts

    def _conditional(self, sub: Sub, one_of: OneOfResolver, refs: tuple[int, ...]
                     ) -> list[Alternative]:
        """``if``/``then``/``else`` as (if and then) or (not if, and else): disjoint."""
        cond = self.child(sub, "if")
        yes = self.expand(cond, one_of, refs)
        no: list[Alternative] = [[self.negation(sub, cond, "if")]]
        if "then" in sub.schema:
            yes = self._product(yes, self.expand(self.child(sub, "then"), one_of, refs), sub)
        if "else" in sub.schema:
            no = self._product(no, self.expand(self.child(sub, "else"), one_of, refs), sub)
        return yes + no

    @staticmethod
    def _product(left: list[Alternative], right: list[Alternative], sub: Sub) -> list[Alternative]:
        """Every conjunction of one alternative of each side, but those a discriminator member
        makes empty (`discriminators`: n conditionals on one member give n + 1, not 2**n)."""
        count = len(left) * len(right)
        if count == 1:  # (the usual product: nothing to prune)
            return [left[0] + right[0]]
        limit = MAX_LISTED_ALTERNATIVES if min(len(left), len(right)) == 1 else MAX_ALTERNATIVES
        if count <= max(limit, MAX_ALTERNATIVES * _PRUNED_FACTOR):
            out = [a + b for a, b in product(left, right)]
            if count > 1:
                out = _distinct([a for a in out if consistent(a)])
            if len(out) <= limit:
                return out
        raise GrammarBudgetError(
            f"the schema at {sub.pointer or '#'} expands into more than {limit} "
            "alternatives (allOf/anyOf/oneOf combinations)")


def _distinct(alternatives: list[Alternative]) -> list[Alternative]:
    """`alternatives` with a subschema that repeats in one conjunction kept once (A and A is A),
    and a conjunction of the same subschemas as an earlier one dropped (A or A is A); a subschema
    is known by its schema object and exclusions, as the lowering's memos know it."""
    out, seen = [], set()
    for alternative in alternatives:
        members: dict[Any, Sub] = {}
        for s in alternative:
            # (an int for a subschema without exclusions, as no tuple equals one)
            known = (id(s.schema), *map(id, s.exclude)) if s.exclude else id(s.schema)
            if known not in members:
                members[known] = s
        key = frozenset(members)
        if key not in seen:
            seen.add(key)
            out.append(alternative if len(members) == len(alternative) else list(members.values()))
    return out
