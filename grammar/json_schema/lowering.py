"""JSON Schema -> byte-level grammar IR.

`Lowerer.lower_subs` turns a conjunction of subschemas into IR: it expands references and
applicators into alternatives (`expand.py`), then merges each alternative's keywords per JSON type.
Scalars are intersected as regular languages; arrays and objects merge their keywords first so that
one member order is kept (`objects.py`).  Keywords the lowering cannot enforce exactly are reported
through `report` (an error, or a warning in lenient mode).
"""
from __future__ import annotations

import itertools
import math
from decimal import Decimal
from typing import Any, Collection, Optional

from formwork.grammar.errors import GrammarBudgetError, GrammarError, RecursionNotSupportedError
from formwork.grammar.ir import (
    EMPTY, NOTHING, And, Node, Not, Nothing, RuleRef, alt, lit, regex, repeat, seq,
)
from formwork.grammar.json_schema import formats, multiples, numbers
from formwork.grammar.json_schema.automata import SHARED, accepts
from formwork.grammar.json_schema.errors import UnsupportedSchemaError
from formwork.grammar.json_schema.expand import APPLICATORS, Alternative, Expander, Sub, plain_unevaluated
from formwork.grammar.json_schema.objects import ObjectLowering
from formwork.grammar.json_schema.one_of import CANONICAL_SCALARS, resolve_one_of
from formwork.grammar.json_schema.options import IndentSpec, JsonSchemaOptions, Whitespace
from formwork.grammar.json_schema.pieces import encoded_format, encoded_pattern, pattern_language
from formwork.grammar.json_schema.strings import quoted, string_content
from formwork.grammar.json_schema.values import (
    ANY_JSON_RULE, AnyValue, any_json_rules, container, freeze, value_node,
)
from formwork.grammar.lexemes import lexeme
from formwork.schemas.keywords import ANNOTATION_KEYWORDS
from formwork.schemas.pointer import child

TYPES = ("null", "boolean", "object", "array", "string", "number")
_ANY_TYPE = frozenset(TYPES) | {"integer"}
#: Keywords that do not constrain the instance (by the time applicators are expanded).
_NEUTRAL = ANNOTATION_KEYWORDS | {"$schema", "$id", "$anchor", "$dynamicAnchor", "$defs",
                                  "definitions", "$comment"}

_LOCAL_FREE = _NEUTRAL | set(APPLICATORS)
#: Keywords whose subschemas the lowering of an array or object lowers in turn (`lower_subs`);
#: a conjunction without any is a leaf, which no `$ref` cycle can pass through.
_NESTING = frozenset({"properties", "patternProperties", "additionalProperties",
                      "unevaluatedProperties", "items", "prefixItems", "additionalItems",
                      "unevaluatedItems"})
#: Keywords whose values (with the draft and options) are all a leaf's lowering reads; a leaf
#: made only of them (and `_LOCAL_FREE` ones) is lowered once per process (`_SHARED_LEAVES`).
_LEAF_KEYWORDS = frozenset({
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
    "minProperties", "maxProperties", "required"}) | _LOCAL_FREE
_LEAF_VALUES = _LEAF_KEYWORDS - set(APPLICATORS)
#: Keywords of documentation only, left out of a shared leaf's key.
_DOCUMENTATION = frozenset({"title", "description", "$comment", "examples", "default",
                            "deprecated", "readOnly", "writeOnly"})
MAX_SHARED_LEAVES = 4096
MAX_NESTED_SCHEMAS = 64  # conjunctions lowered inside one another

# Reusable IR pieces per whitespace policy, shared by every compilation so that the automaton
# builder's memo finds them by identity (equal-but-distinct deep nodes cost a deep comparison).
_ANY_VALUES: dict[tuple, AnyValue] = {}
_LEAVES: dict[tuple, dict[Any, Node]] = {}
#: Lowered leaf conjunctions by `Lowerer._shared_leaf_key`: the usual property schemas
#: ({"type": "string"}, {"type": "string", "format": "date"}, ...) recur across schemas.
_SHARED_LEAVES: dict[tuple, Node] = {}


def _ws_key(options: JsonSchemaOptions) -> tuple:
    return (repr(options.whitespace), options.max_whitespace)


def _shared_any_value(options: JsonSchemaOptions) -> AnyValue:
    key = _ws_key(options)
    got = _ANY_VALUES.get(key)
    if got is None:
        got = _ANY_VALUES[key] = AnyValue(Whitespace(options),
                                          isinstance(options.whitespace, IndentSpec))
    return got


def _plain_leaf(sub: Sub) -> bool:
    """Whether `sub` is a leaf of value keywords only (no applicator, nothing nested, not only
    annotations): it expands to itself, and `_lower_dicts` lowers it as a leaf."""
    schema = sub.schema
    return type(schema) is dict and _LEAF_VALUES.issuperset(schema) and \
        not _NEUTRAL.issuperset(schema) and not sub.exclude


def _rule_name(frame: tuple[str, int]) -> str:
    """The grammar rule of a conjunction that a $ref cycle returns to: its pointer and number."""
    return f"{frame[0] or '#'} ({frame[1]})"


class Lowerer:
    """Lowers the schemas of one document under one set of options."""

    def __init__(self, doc: Any, options: JsonSchemaOptions):
        self.doc = doc
        self.options = options
        self.any_value = _shared_any_value(options)
        self.ws = self.any_value.ws  # shared too: its separators are built once per process
        self.expander = Expander(doc, doc.draft.name == "draft-07")
        self.warnings: list[str] = []
        self._indent = isinstance(options.whitespace, IndentSpec)
        # conjunctions being lowered -> (pointer, number): their rule name if a $ref cycle returns
        self._frames: dict[tuple[int, ...], tuple[str, int]] = {}
        self._referenced: set[tuple[str, int]] = set()
        self.rules: dict[str, Node] = {}  # recursive rules ($ref cycles, unbounded any-JSON)
        self._rule_ids = itertools.count()
        self._memo: dict[tuple, Node] = {}
        self._pattern_dfas: dict[str, Any] = {}
        self._leaves = _LEAVES.setdefault(_ws_key(options), {})
        # what every shared leaf of this lowering depends on besides its keywords; none is shared
        # when any-JSON values are a recursive rule (a leaf may add it to `rules`)
        self._leaf_context = None if options.max_nesting_depth is None else (
            doc.draft.name, _ws_key(options), options.max_nesting_depth,
            options.forbid_additional_properties)

    # ------------------------------------------------------------------ helpers
    def report(self, keyword: str, pointer: str, reason: str,
               error: type = UnsupportedSchemaError) -> None:
        """Fail on an unenforceable keyword, or record a warning when lenient."""
        exc = error(keyword, pointer, reason)
        if not self.options.lenient:
            raise exc
        self.warnings.append(str(exc))

    def pattern_node(self, pattern: str, keyword: str, pointer: str, encoded: bool = False) -> Node:
        """Decoded-value language of a regex (search semantics), or with `encoded` the canonical
        spellings of those strings; a regex outside the supported syntax is an
        `UnsupportedSchemaError` naming `keyword` at `pointer`."""
        try:
            return encoded_pattern(pattern) if encoded else pattern_language(pattern)
        except GrammarError as exc:
            raise UnsupportedSchemaError(keyword, pointer, str(exc)) from None

    def pattern_matches(self, pattern: str, pointer: str, text: str) -> bool:
        """Whether a patternProperties regex (at `pointer`) matches the key `text`."""
        dfa = self._pattern_dfas.get(pattern)
        if dfa is None:
            node = self.pattern_node(pattern, "patternProperties", pointer)
            dfa = self._pattern_dfas[pattern] = SHARED.compile(node)
        return accepts(dfa, text.encode("utf-8"))

    def leaf(self, spec: Any) -> Node:
        """A frequently repeated scalar language, built once per process so that automaton
        memos find it by identity (`spec`: a regex, or ("string", min_length, max_length)); the
        number or the string's contents is a lexeme (see `formwork.grammar.lexemes`)."""
        node = self._leaves.get(spec)
        if node is None:
            if isinstance(spec, str):
                node = freeze(regex(spec))  # small: an embedded DFA, whose masks are shared
            else:
                # length-bounded strings use the canonical spelling: far fewer automaton states
                # per counted character than the general escape model
                bounded = spec[1] > 0 or spec[2] is not None
                node = quoted(lexeme(string_content(spec[1], spec[2], canonical=bounded)))
            self._leaves[spec] = node
        return node

    def expand(self, sub: Sub) -> list[Alternative]:
        """`sub` as alternatives (see `Expander.expand`), each `oneOf` resolved by this lowerer."""
        return self.expander.expand(sub, self._one_of)

    def _one_of(self, sub: Sub, branches: list[list[Alternative]]) -> list[Alternative]:
        return resolve_one_of(self, sub, branches)

    def _is_valid(self, value: Any, sub: Sub) -> bool:
        """jsonschema's verdict for `value` against one (local) subschema, formats asserted."""
        cls = self.doc.draft.validator
        validator = cls(sub.schema, format_checker=cls.FORMAT_CHECKER, _resolver=sub.resolver or self.doc.resolver)
        return validator.is_valid(value)

    def _values_allowed(self, values: list[Any], owner: Sub, keyword: str, subs: list[Sub]
                        ) -> list[Any]:
        """The `const`/`enum` `values` of `owner` that every subschema in `subs` accepts.

        A subschema whose only constraint is `type` (or, for `owner`, that keyword itself) is
        decided with the validator's type checker; any other is asked to jsonschema.
        """
        is_type = self.doc.draft.validator.TYPE_CHECKER.is_type
        type_lists: list[list[str]] = []
        others: list[Sub] = []
        for o in subs:
            rest = o.schema.keys() - _LOCAL_FREE - {"type"}
            if o is owner:
                rest.discard(keyword)
            if rest:
                others.append(o.local())
            elif "type" in o.schema:
                t = o.schema["type"]
                type_lists.append([t] if isinstance(t, str) else list(t))
        return [v for v in values
                if all(any(is_type(v, t) for t in types) for types in type_lists)
                and all(self._is_valid(v, o) for o in others)]

    # ------------------------------------------------------------------ entry points
    def lower_root(self) -> Node:
        return self.lower_subs([self.expander.root()], 0)

    def lower_subs(self, subs: list[Sub], depth: int) -> Node:
        """The language of values satisfying every subschema in `subs` (none: any value)."""
        if not subs:
            return self.unconstrained(depth)
        key = (tuple([id(s.schema) for s in subs]), depth if self._indent else 0)
        got = self._memo.get(key)
        if got is not None:
            return got
        if len(subs) == 1 and _plain_leaf(subs[0]):
            node = self._memo[key] = self._lower_leaf(subs, depth)  # what the steps below come to
            return node
        if len(subs) == 1:
            alts = self.expand(subs[0])
        else:
            alts = [[]]
            for s in subs:
                expanded = self.expand(s)
                alts = self.expander._product(alts, expanded, s)
        if len(alts) == 1:  # alt() of one node is that node (in normal form)
            node = self.lower_alternative(alts[0], depth)
        else:
            node = alt(*[self.lower_alternative(a, depth) for a in alts])
        self._memo[key] = node
        return node

    def lower_alternative(self, subs: Alternative, depth: int) -> Node:
        """One conjunction of subschemas whose applicators are already expanded."""
        dicts: list[Sub] = []
        excluded: list[Node] = []
        for s in subs:
            schema = s.schema
            if schema is False:
                return NOTHING
            if isinstance(schema, dict):
                dicts.append(s)
            if s.exclude:
                excluded.extend(s.exclude)
        node = self._lower_dicts(dicts, depth)
        if excluded and not isinstance(node, Nothing):
            node = And(And(node, CANONICAL_SCALARS), Not(alt(*excluded)))
        return node

    def _lower_dicts(self, subs: list[Sub], depth: int) -> Node:
        schemas = [s.schema for s in subs]
        if all(map(_NEUTRAL.issuperset, schemas)):  # {} and annotation-only schemas
            return self.unconstrained(depth)
        if all(map(_NESTING.isdisjoint, schemas)):
            return self._lower_leaf(subs, depth)
        # the conjunction's identity: the subschemas with local keywords (applicator-only ones,
        # such as a bare {"$ref": ...}, were expanded into the others)
        key = tuple([id(s) for s in schemas if not _LOCAL_FREE.issuperset(s)])
        frame = self._frames.get(key)
        if frame is not None and not self._indent:
            # a $ref cycle back to the same conjunction: true recursion through a grammar rule
            self._referenced.add(frame)
            return RuleRef(_rule_name(frame))
        if frame is not None:
            raise RecursionNotSupportedError(
                f"the schema at {subs[0].pointer or '#'} contains itself through $ref, and indented "
                "whitespace depends on the depth; use a whitespace policy without indent")
        if len(self._frames) >= MAX_NESTED_SCHEMAS:
            raise RecursionNotSupportedError(
                f"the schema at {subs[0].pointer or '#'} nests more than {MAX_NESTED_SCHEMAS} "
                "distinct combinations of subschemas (a $ref cycle that never repeats exactly)")
        frame = self._frames[key] = (subs[0].pointer, next(self._rule_ids))
        try:
            node = self._lower_alternative(subs, depth)
        finally:
            del self._frames[key]
        if frame in self._referenced:
            name = _rule_name(frame)
            self.rules[name] = node
            return RuleRef(name)
        return node

    def _lower_leaf(self, subs: list[Sub], depth: int) -> Node:
        """`_lower_alternative` of a conjunction with no nested subschemas: it lowers no other
        conjunction, so it needs no frame (it still counts towards the nesting limit and takes a
        rule number, as every conjunction does)."""
        if len(self._frames) >= MAX_NESTED_SCHEMAS:
            raise RecursionNotSupportedError(
                f"the schema at {subs[0].pointer or '#'} nests more than {MAX_NESTED_SCHEMAS} "
                "distinct combinations of subschemas (a $ref cycle that never repeats exactly)")
        next(self._rule_ids)
        key = self._shared_leaf_key(subs, depth)
        if key is None:
            return self._lower_alternative(subs, depth)
        node = _SHARED_LEAVES.get(key)
        if node is None:
            warned = len(self.warnings)
            node = self._lower_alternative(subs, depth)
            if len(self.warnings) == warned:  # a leaf that warns (lenient) is lowered each time
                if len(_SHARED_LEAVES) >= MAX_SHARED_LEAVES:
                    _SHARED_LEAVES.clear()
                _SHARED_LEAVES[key] = node
        return node

    def _shared_leaf_key(self, subs: list[Sub], depth: int) -> Optional[tuple]:
        """All the lowering of the leaf conjunction `subs` depends on (its keywords but for
        documentation, by `repr`: exact for JSON values, 1, 1.0 and True included, unlike `==`;
        the draft, options and, when indenting, depth), or None when it may depend on more
        (other keywords, say)."""
        if self._leaf_context is None:
            return None
        texts = []
        for s in subs:
            schema = s.schema
            if not _LEAF_KEYWORDS.issuperset(schema):
                return None
            if not _DOCUMENTATION.isdisjoint(schema):
                schema = {k: v for k, v in schema.items() if k not in _DOCUMENTATION}
            texts.append(repr(schema))
        return (self._leaf_context, depth if self._indent else 0, *texts)

    def unconstrained(self, depth: int) -> Node:
        """Any JSON value: nesting bounded by `max_nesting_depth`, or (None) a recursive rule."""
        levels = self.options.max_nesting_depth
        if levels is not None:
            return self.any_value(levels, depth)
        if isinstance(self.options.whitespace, IndentSpec):
            raise RecursionNotSupportedError(
                "unbounded nesting (max_nesting_depth=None) needs a whitespace policy without indent")
        if ANY_JSON_RULE not in self.rules:
            self.rules.update(any_json_rules(self.ws))
        return RuleRef(ANY_JSON_RULE)

    def _lower_alternative(self, subs: list[Sub], depth: int) -> Node:
        for s in subs:
            sch = s.schema
            if "const" in sch or "enum" in sch:
                kw = "const" if "const" in sch else "enum"
                values = [sch["const"]] if kw == "const" else list(sch["enum"])
                keep = self._values_allowed(values, s, kw, subs)
                return alt(*(value_node(v, self.ws, depth) for v in keep))
        types: Collection[str] = _ANY_TYPE  # only the names in TYPES and "integer" are asked
        for s in subs:
            t = s.schema.get("type")
            if t is not None:
                allowed = {t} if isinstance(t, str) else set(t)
                if "number" in allowed:
                    allowed.add("integer")
                types = allowed if types is _ANY_TYPE else allowed & types
        parts = []
        if "null" in types:
            parts.append(lit("null"))
        if "boolean" in types:
            parts.append(alt(lit("true"), lit("false")))
        if "number" in types or "integer" in types:
            parts.append(self.lower_number(subs, integer_only="number" not in types))
        if "string" in types:
            parts.append(self.lower_string(subs))
        if "array" in types:
            parts.append(self.lower_array(subs, depth))
        if "object" in types:
            parts.append(ObjectLowering(self, subs, depth).lower())
        return alt(*parts)

    # ------------------------------------------------------------------ numbers
    def lower_number(self, subs: list[Sub], integer_only: bool) -> Node:
        lo: Optional[Decimal] = None
        hi: Optional[Decimal] = None
        lo_strict = hi_strict = False
        divisors: list[int] = []
        for s in subs:
            sch = s.schema
            for kw, strict, is_lo in (("minimum", False, True), ("exclusiveMinimum", True, True),
                                      ("maximum", False, False), ("exclusiveMaximum", True, False)):
                if kw not in sch or isinstance(sch[kw], bool):
                    continue
                v = Decimal(str(sch[kw]))
                if is_lo and (lo is None or v > lo or (v == lo and strict)):
                    lo, lo_strict = v, strict
                if not is_lo and (hi is None or v < hi or (v == hi and strict)):
                    hi, hi_strict = v, strict
            if "multipleOf" in sch:
                m = Decimal(str(sch["multipleOf"]))
                if m != m.to_integral_value():
                    self.report("multipleOf", child(s.pointer, "multipleOf"),
                                f"fractional divisor {sch['multipleOf']!r} is not supported")
                    continue
                divisors.append((int(m), child(s.pointer, "multipleOf")))
        if divisors or integer_only:
            return self._lower_integer(lo, lo_strict, hi, hi_strict, divisors)
        pattern = numbers.number_range(lo, lo_strict, hi, hi_strict)
        return NOTHING if pattern is None else self.leaf(pattern)

    def _lower_integer(self, lo: Optional[Decimal], lo_strict: bool, hi: Optional[Decimal],
                       hi_strict: bool, divisors: list[tuple[int, str]]) -> Node:
        ilo = None if lo is None else (math.floor(lo) + 1 if lo_strict else math.ceil(lo))
        ihi = None if hi is None else (math.ceil(hi) - 1 if hi_strict else math.floor(hi))
        pattern = numbers.integer_range(ilo, ihi)
        if pattern is None:
            return NOTHING
        k = 1
        for d, _ in divisors:
            k = k * d // math.gcd(k, d)
        if k == 1:
            return self.leaf(pattern)
        if ilo is not None and ihi is not None:
            values = multiples.enumerate_multiples(ilo, ihi, k)
            if values is not None:
                return alt(*(lit(str(v)) for v in values))
        node = regex(pattern)
        try:
            parts = multiples.multiple_of_integer(k)
        except GrammarBudgetError as exc:
            self.report("multipleOf", divisors[0][1], str(exc))
            return node
        for p in parts:
            node = And(node, regex(p))
        return node

    # ------------------------------------------------------------------ strings
    def lower_string(self, subs: list[Sub]) -> Node:
        min_len, max_len = 0, None
        content: Optional[Node] = None
        for s in subs:
            sch = s.schema
            min_len = max(min_len, int(sch.get("minLength", 0)))
            if "maxLength" in sch:
                m = int(sch["maxLength"])
                max_len = m if max_len is None else min(max_len, m)
            extra = []
            if "pattern" in sch:
                try:
                    extra.append(self.pattern_node(sch["pattern"], "pattern",
                                                   child(s.pointer, "pattern"), encoded=True))
                except UnsupportedSchemaError as exc:
                    self.report(exc.keyword, exc.pointer, exc.reason)
            if "format" in sch:
                fmt = sch["format"]
                if fmt in formats.SUPPORTED:
                    extra.append(encoded_format(fmt))
                else:
                    self.report("format", child(s.pointer, "format"),
                                f"format {fmt!r} is not supported")
            for node in extra:
                content = node if content is None else And(content, node)
        if max_len is not None and max_len < min_len:
            return NOTHING
        if content is None:
            return self.leaf(("string", min_len, max_len))
        if min_len or max_len is not None:
            content = And(content, string_content(min_len, max_len, canonical=True))
        return quoted(content)

    # ------------------------------------------------------------------ arrays
    def lower_array(self, subs: list[Sub], depth: int) -> Node:
        draft07 = self.doc.draft.name == "draft-07"
        prefixes: list[list[Sub]] = []
        rests: list[Optional[Sub]] = []
        min_items, max_items = 0, None
        for s in subs:
            sch = s.schema
            prefix: list[Sub] = []
            rest: Optional[Sub] = None
            items = sch.get("items")
            if draft07 and isinstance(items, list):
                prefix = [self.expander.child(s, "items", i) for i in range(len(items))]
                if "additionalItems" in sch:
                    rest = self.expander.child(s, "additionalItems")
            else:
                if "prefixItems" in sch and not draft07:
                    prefix = [self.expander.child(s, "prefixItems", i)
                              for i in range(len(sch["prefixItems"]))]
                if "items" in sch:
                    rest = self.expander.child(s, "items")
                elif plain_unevaluated(sch, "unevaluatedItems"):
                    rest = self.expander.child(s, "unevaluatedItems")
            prefixes.append(prefix)
            rests.append(rest)
            min_items = max(min_items, int(sch.get("minItems", 0)))
            if "maxItems" in sch:
                m = int(sch["maxItems"])
                max_items = m if max_items is None else min(max_items, m)
        if max_items is not None and max_items < min_items:
            return NOTHING
        longest = max((len(p) for p in prefixes), default=0)

        def element(i: Optional[int]) -> Node:
            """Element language at position i (None: positions past every prefix)."""
            conj = []
            for prefix, rest in zip(prefixes, rests):
                if i is not None and i < len(prefix):
                    conj.append(prefix[i])
                elif rest is not None:
                    conj.append(rest)
            return self.lower_subs(conj, depth + 1)

        comma = self.ws.comma(depth)
        positions = [element(i) for i in range(longest)]
        tail_elem = element(None)
        # the first impossible position caps the length
        for i, node in enumerate(positions + [tail_elem]):
            if isinstance(node, Nothing):
                max_items = i if max_items is None else min(max_items, i)
                break
        if max_items is not None and max_items < min_items:
            return NOTHING

        if max_items == 0:
            return lit("[]")
        items = _array_items(positions, tail_elem, comma, min_items, max_items)
        return container(self.ws, depth, "[", "]", items, min_items == 0)


def _array_items(positions: list[Node], tail: Node, comma: Node, min_items: int,
                 max_items: Optional[int]) -> Node:
    """The elements of a non-empty array, the first one present (no leading comma): element i
    is `positions[i]`, past them `tail`; built from the last element that can occur backwards
    (a loop, not a recursive closure: those are reference cycles left for the collector)."""
    longest = len(positions)
    last = longest if max_items is None else min(longest, max_items - 1)
    if last == longest:  # the elements past the positional ones
        lo = max(0, min_items - last - 1)
        hi = None if max_items is None else max_items - last - 1
        node = seq(tail, repeat(seq(comma, tail), lo, hi))
    else:
        node = positions[last]
    for i in range(last - 1, -1, -1):
        more = seq(comma, node)
        node = seq(positions[i], more if i + 1 < min_items else alt(more, EMPTY))
    return node
