"""JSON Schema -> byte-level grammar IR.

`Lowerer.lower_subs` turns a conjunction of subschemas into IR: it expands references and
applicators into alternatives (`expand.py`), then merges each alternative's keywords per JSON type.
Scalars are intersected as regular languages (`scalars.py`); arrays (`arrays.py`) and objects
merge their keywords first so that one member order is kept (`objects.py`).  Keywords the lowering
cannot enforce exactly are reported through `report` (an error, or a warning in lenient mode).
"""
from __future__ import annotations

from typing import Any, Callable, Collection

from formwork.grammar.budget import COARSE_EVERY, active_budget
from formwork.grammar.errors import GrammarError, RecursionNotSupportedError
from formwork.grammar.ir import NOTHING, And, Node, Not, Nothing, RuleRef, alt, lit
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema.arrays import lower_array
from formwork.grammar.json_schema.automata import SHARED, accepts
from formwork.grammar.json_schema.ecma_validation import ecma_validator
from formwork.grammar.json_schema.errors import UnsupportedSchemaError
from formwork.grammar.json_schema.expand import (
    EXPANDED_KEYWORDS, LOCAL_CONSTRAINING_KEYWORDS, WITNESS, Alternative, Expander, Sub, plain_schema,
)
from formwork.grammar.json_schema.const_values import values_allowed
from formwork.grammar.json_schema.negation import negated_container, negations, scalar_complement
from formwork.grammar.json_schema.type_restrictions import SCALAR_TYPES
from formwork.grammar.json_schema.objects import ObjectLowering
from formwork.grammar.json_schema.one_of import CANONICAL_SCALARS, OneOfResolutions
from formwork.grammar.json_schema.options import IndentSpec, JsonSchemaOptions, Whitespace
from formwork.grammar.json_schema.pieces import encoded_pattern, pattern_language
from formwork.grammar.json_schema.ref_lowerings import SITE_KEYWORDS, RefLowerings
from formwork.grammar.json_schema.scalars import lower_number, lower_string
from formwork.grammar.json_schema.shared_leaves import NOT_LEAF_VALUES, SHARED_LEAVES, keep_leaf, shared_leaf_key
from formwork.grammar.json_schema.strings import quoted, string_content
from formwork.grammar.json_schema.values import (
    ANY_JSON_RULE, AnyValue, any_json_rules, freeze, value_node,
)
from formwork.grammar.lexemes import lexeme

TYPES = ("null", "boolean", "object", "array", "string", "number")
_ANY_TYPE = frozenset(TYPES) | {"integer"}
#: Keywords a subschema keeps once its applicators are expanded ("local" ones) that constrain.
_LOCAL = LOCAL_CONSTRAINING_KEYWORDS
#: Keywords whose subschemas the lowering of an array or object lowers in turn (`lower_subs`);
#: a conjunction without any is a leaf, which no `$ref` cycle can pass through.
_NESTING = frozenset({"properties", "patternProperties", "additionalProperties",
                      "unevaluatedProperties", "items", "prefixItems", "additionalItems",
                      "unevaluatedItems", "contains", "propertyNames", "not", WITNESS})
MAX_NESTED_SCHEMAS = 64  # conjunctions lowered inside one another

# Reusable IR pieces per whitespace policy, shared by every compilation so that the automaton
# builder's memo finds them by identity (equal-but-distinct deep nodes cost a deep comparison).
_ANY_VALUES: dict[tuple, AnyValue] = {}
_LEAVES: dict[tuple, dict[Any, Node]] = {}


def _ws_key(options: JsonSchemaOptions) -> tuple:
    return (repr(options.whitespace), options.max_whitespace)


def _shared_any_value(options: JsonSchemaOptions) -> AnyValue:
    key = _ws_key(options)
    got = _ANY_VALUES.get(key)
    if got is None:
        got = _ANY_VALUES[key] = AnyValue(Whitespace(options),
                                          isinstance(options.whitespace, IndentSpec))
    return got


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
        self._pending: dict[tuple, tuple[str, int]] = {}  # the same for `lower_subs` calls
        self._referenced: set[tuple[str, int]] = set()
        self.rules: dict[str, Node] = {}  # recursive rules ($ref cycles, unbounded any-JSON)
        self.unique_arrays: list[str] = []  # uniqueItems pointers of arrays tagged for the matcher
        self.unique_nodes: list[Node] = []  # those arrays' IR (without the tag), in the same order
        # intersections and complements built over lowered JSON values, which may hold open values
        # (`value_product`; a shared leaf builds none)
        self.value_products: list[Node] = []
        self.rules_taken = 0  # rule numbers taken (every conjunction takes one)
        self._memo: dict[tuple, Node] = {}
        self._one_ofs = OneOfResolutions()  # each `oneOf` resolved once (if it changed nothing else)
        # what lowerings that depend on more than their contents did to this lowerer, counted (it
        # only grows; `ref_lowerings` keeps no lowering that changed it): a warning, a grammar
        # rule, a unique array tagged, a product over values, a `RuleRef` made where a $ref cycle
        # came back, a memo hit on a lowering that changed it (`_context_keys`)
        self.changes = 0
        self._context_keys: set[tuple] = set()
        self._budget = active_budget()  # the compile's, which `check_budget` would find (or None)
        self.kept = RefLowerings(doc, options, isinstance(options.whitespace, IndentSpec),
                                 MAX_NESTED_SCHEMAS)
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
        self.changes += 1

    def value_product(self, node: Node) -> Node:
        """`node`, an `And` or `Not` over lowered JSON values, recorded: an open value inside it
        is built into a complete automaton (see `AnyValue.in_product`)."""
        self.value_products.append(node)
        self.changes += 1
        return node

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
                # pinned: marked once, like the leaf (the lexeme table's LRU would not see it used again)
                node = quoted(lexeme(string_content(spec[1], spec[2], canonical=bounded), pinned=True))
            self._leaves[spec] = node
        return node

    def expand(self, sub: Sub) -> list[Alternative]:
        """`sub` as alternatives (see `Expander.expand`), each `oneOf` resolved by this lowerer."""
        return self.expander.expand(sub, self._one_of)

    def _one_of(self, sub: Sub, branches: list[list[Alternative]]) -> list[Alternative]:
        return self._one_ofs.resolve(self, sub, branches)

    def _is_valid(self, value: Any, sub: Sub) -> bool:
        """jsonschema's verdict for `value` against one (local) subschema, formats asserted."""
        return self._validator(sub).is_valid(value)

    def _validator(self, sub: Sub) -> Any:
        """A jsonschema validator of one (local) subschema, formats asserted, regexes read as
        ECMA-262 (`ecma_validation`)."""
        cls = ecma_validator(self.doc.draft.validator)
        return cls(plain_schema(sub.schema), format_checker=cls.FORMAT_CHECKER,
                   _resolver=sub.resolver or self.doc.resolver)

    # ------------------------------------------------------------------ entry points
    def lower_root(self) -> Node:
        return self.lower_subs([self.expander.root()], 0)

    def lower_subs(self, subs: list[Sub], depth: int) -> Node:
        """The language of values satisfying every subschema in `subs` (none: any value)."""
        if not subs:
            return self.unconstrained(depth)
        first = subs[0]
        single = len(subs) == 1
        # (one subschema: its schema's id alone, not a tuple of one; no key of many is an int)
        key = (id(first.schema) if single else tuple([id(s.schema) for s in subs]),
               depth if self._indent else 0)
        got = self._memo.get(key)
        if got is not None:
            if key in self._context_keys:
                self.changes += 1
            return got
        if self._budget is not None:
            self._budget.tick("lowering the schema", COARSE_EVERY)
        before = self.changes
        schema = first.schema
        if single and type(schema) is dict and NOT_LEAF_VALUES.isdisjoint(schema) and \
                not _LOCAL.isdisjoint(schema) and not first.exclude:
            # a leaf of value keywords only (no applicator, nothing nested, not only
            # annotations): it expands to itself, and `_lower_dicts` would lower it as a leaf
            node = self._lower_leaf(subs, depth)
        else:
            frame = self._pending.get(key)
            if frame is not None and not self._indent:
                # a $ref cycle back to these subschemas before their expansion: a rule of the whole
                # disjunction (otherwise each of its alternatives nests the others before one repeats)
                self._referenced.add(frame)
                self.changes += 1
                return RuleRef(_rule_name(frame))
            site = self.kept.begin(self, first, depth) if single and type(schema) is dict and \
                not SITE_KEYWORDS.isdisjoint(schema) else None
            if site is not None and site.kept is not None:
                node = site.kept
            else:
                node = self._framed(self._pending, key, first.pointer, self._lower_expanded, subs, depth)
                if site is not None:
                    self.kept.end(self, site, node)
        self._memo[key] = node
        if self.changes != before:
            self._context_keys.add(key)
        return node

    def _lower_expanded(self, subs: list[Sub], depth: int) -> Node:
        """`lower_subs` of `subs`: the union of their expansion's alternatives, each lowered."""
        if len(subs) == 1:
            sub = subs[0]
            if type(sub.schema) is dict and EXPANDED_KEYWORDS.isdisjoint(sub.schema) and not sub.exclude:
                return self._lower_dicts(subs, depth)  # it expands to itself, a dict
            alts = self.expand(sub)
        else:
            alts = [[]]
            for s in subs:
                expanded = self.expand(s)
                alts = self.expander._product(alts, expanded, s)
        if len(alts) == 1:  # alt() of one node is that node (in normal form)
            return self.lower_alternative(alts[0], depth)
        return alt(*[self.lower_alternative(a, depth) for a in alts])

    def lower_alternative(self, subs: Alternative, depth: int) -> Node:
        """One conjunction of subschemas whose applicators are already expanded."""
        dicts: list[Sub] = []
        excluded: list[Node] = []
        seen: set[int] = set()
        for s in subs:
            schema = s.schema
            if schema is False:
                return NOTHING
            if type(schema) is dict or isinstance(schema, dict):
                known = id(schema)
                if known not in seen:  # A and A is A
                    seen.add(known)
                    dicts.append(s)
            if s.exclude:
                excluded.extend(s.exclude)
        node = self._lower_dicts(dicts, depth)
        if excluded and not isinstance(node, Nothing):
            node = self.value_product(And(And(node, CANONICAL_SCALARS), Not(alt(*excluded))))
        return node

    def _lower_dicts(self, subs: list[Sub], depth: int) -> Node:
        if len(subs) == 1:
            schema = subs[0].schema
            if _LOCAL.isdisjoint(schema):  # {} and annotation-only schemas (applicators expanded)
                return self.unconstrained(depth)
            if _NESTING.isdisjoint(schema):
                return self._lower_leaf(subs, depth)
            key: tuple = (id(schema),)
        else:
            schemas = [s.schema for s in subs]
            if all(map(_LOCAL.isdisjoint, schemas)):
                return self.unconstrained(depth)
            if all(map(_NESTING.isdisjoint, schemas)):
                return self._lower_leaf(subs, depth)
            # the conjunction's identity: the subschemas with local keywords (applicator-only
            # ones, such as a bare {"$ref": ...}, were expanded into the others)
            key = tuple([id(s) for s in schemas if not _LOCAL.isdisjoint(s)])
        frame = self._frames.get(key)
        if frame is not None and not self._indent:
            # a $ref cycle back to the same conjunction: true recursion through a grammar rule
            self._referenced.add(frame)
            self.changes += 1
            return RuleRef(_rule_name(frame))
        if frame is not None:
            raise RecursionNotSupportedError(
                f"the schema at {subs[0].pointer or '#'} contains itself through $ref, and indented "
                "whitespace depends on the depth; use a whitespace policy without indent")
        self._check_nesting(subs)
        return self._framed(self._frames, key, subs[0].pointer, self._lower_alternative, subs, depth)

    def _check_nesting(self, subs: list[Sub]) -> None:
        """Refuse a conjunction nested inside `MAX_NESTED_SCHEMAS` open ones (noted for `kept`)."""
        open_frames = len(self._frames)
        self.kept.note_frames(open_frames)
        if open_frames >= MAX_NESTED_SCHEMAS:
            raise RecursionNotSupportedError(
                f"the schema at {subs[0].pointer or '#'} nests more than {MAX_NESTED_SCHEMAS} "
                "distinct combinations of subschemas (a $ref cycle that never repeats exactly)")

    def _framed(self, frames: dict, key: tuple, pointer: str,
                lower: Callable[[list[Sub], int], Node], subs: list[Sub], depth: int) -> Node:
        """`lower(subs, depth)` with a frame for `key` open in `frames` meanwhile; a `$ref` cycle
        that came back to the frame (`_referenced`) makes the result a grammar rule, returned as its
        `RuleRef`.  (The lowering and its arguments rather than a closure: a closure a frame is an
        allocation and a Python call more, on every conjunction lowered.)"""
        frame = frames[key] = (pointer, self.rules_taken)
        self.rules_taken += 1
        try:
            node = lower(subs, depth)
        finally:
            del frames[key]
        if frame not in self._referenced:
            return node
        name = _rule_name(frame)
        self.rules[name] = node
        self.changes += 1
        return RuleRef(name)

    def _lower_leaf(self, subs: list[Sub], depth: int) -> Node:
        """`_lower_alternative` of a conjunction with no nested subschemas: it lowers no other
        conjunction, so it needs no frame (it still counts towards the nesting limit and takes a
        rule number, as every conjunction does)."""
        self._check_nesting(subs)
        self.rules_taken += 1
        key = shared_leaf_key(self._leaf_context, depth if self._indent else 0, subs)
        if key is None:
            return self._lower_alternative(subs, depth)
        node = SHARED_LEAVES.get(key)
        if node is None:
            warned = len(self.warnings)
            node = self._lower_alternative(subs, depth)
            if len(self.warnings) == warned:  # a leaf that warns (lenient) is lowered each time
                keep_leaf(key, node)
        return node

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
            self.changes += 1
        return RuleRef(ANY_JSON_RULE)

    def _lower_alternative(self, subs: list[Sub], depth: int) -> Node:
        for s in subs:
            sch = s.schema
            if "const" in sch or "enum" in sch:
                kw = "const" if "const" in sch else "enum"
                values = [sch["const"]] if kw == "const" else list(sch["enum"])
                keep = values_allowed(self, values, s, kw, subs)
                return alt(*(value_node(v, self.ws, depth) for v in keep))
        types: Collection[str] = _ANY_TYPE  # only the names in TYPES and "integer" are asked
        for s in subs:
            t = s.schema["type"] if "type" in s.schema else None
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
            parts.append(lower_number(self, subs, integer_only="number" not in types))
        if "string" in types:
            parts.append(lower_string(self, subs))
        negs = negations(self, subs)
        if negs and parts:
            scalar_types = tuple(t for t in SCALAR_TYPES if t in types)
            if "integer" in types and "number" not in types:
                scalar_types += ("integer",)
            parts = [scalar_complement(self, alt(*parts), negs, scalar_types, depth)]
        for kind in ("array", "object"):
            if kind not in types:
                continue
            if negs:
                parts.append(negated_container(self, subs, negs, kind, depth))
            elif kind == "array":
                parts.append(lower_array(self, subs, depth))
            else:
                parts.append(ObjectLowering(self, subs, depth).lower())
        return alt(*parts)
