"""JSON Schema (draft 2020-12 and draft-07) -> grammar IR -> compiled token-mask grammar.

    g = compile_json_schema({"type": "object", "properties": {...}}, vocab)
    m = g.matcher()

The language accepted is documented in the submodules: `strings` (escapes, canonical spellings,
lengths in code points), `numbers` (integer and decimal ranges, multipleOf), `formats`, `objects`
(member order: declared properties in schema order, then extra members), `one_of`, `options`
(whitespace).  In short:

* ``const``/``enum`` values are spelled canonically (integral numbers without a fraction, strings
  as ``json.dumps(ensure_ascii=False)``, members in the value's own order, the policy's whitespace);
  values are kept only if they satisfy the sibling keywords (checked with ``jsonschema``);
* integers are canonical (no ``-0``, ``1.0`` or exponent); bounded numbers have no exponent;
* ``allOf`` and sibling keywords merge (objects and arrays keyword by keyword, scalars by
  intersecting their languages); ``anyOf`` is a union; ``oneOf`` is exact for disjoint branches
  and for branches that share only scalar values, and otherwise takes each branch minus the
  branches it overlaps;
* ``not`` is a complement by JSON type (`negation`): scalars by canonical spelling, objects and
  arrays by their shape (``not: {required: [x]}`` is an object without x); ``if``/``then``/``else``
  is (if and then) or (not if, and else).  What has no exact complement (``additionalProperties``
  with a subschema, ``patternProperties``, ``propertyNames``, ``contains``, ``uniqueItems``,
  over-strict formats) is an error naming the keyword and pointer (lenient: a warning, and those
  values are not excluded);
* ``unevaluatedProperties``/``unevaluatedItems`` act as ``additionalProperties``/``items`` over
  what each alternative of their schema object evaluates (`unevaluated`; conservative for an
  instance matching several ``anyOf`` branches);
* ``format`` is asserted (see `formats` for the few over-strict corners).

``$ref`` cycles back to the same (sub)schema compile to recursive grammar rules (the Earley
automaton of `formwork.grammar.cfg`); a cycle through a different combination of subschemas, or
under indented whitespace, raises `RecursionNotSupportedError`, and a cycle with no base case is an
`EmptyLanguageError`.  Values whose schema allows any JSON nest at most `max_nesting_depth`
containers deep; `max_nesting_depth=None` makes them exact (a recursive any-JSON rule).  The
default ``"auto"`` is exact for an *open* schema (``{}``, ``true``, ``{"type": "object"}``: any
JSON of some types, e.g. ``response_format: json_object``) and bounds open values inside a
constrained schema at `options.BOUNDED_NESTING_DEPTH` (6) levels, 2 under an indent policy (they
keep the schema one regular automaton, whose token masks are cached per state and, inside an open
value, shared by every schema; on the iglu-central corpus the context-free path has masks past
1 s where the bounded automaton has none).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.gc_pause import paused_gc
from formwork.grammar.ir import Grammar, Node
from formwork.grammar.json_schema.errors import (
    InvalidSchemaError, OneOfOverlapError, SchemaLoweringError, UnsupportedSchemaError,
)
from formwork.grammar.json_schema.cache import compile_cached
from formwork.grammar.json_schema.expand import plain_unevaluated
from formwork.grammar.json_schema.lowering import Lowerer
from formwork.grammar.json_schema.options import (
    SHALLOW_NESTING_DEPTH, IndentSpec, JsonSchemaOptions, NestingOption, WhitespaceOption,
    resolve_nesting_depth,
)
from formwork.schemas import load_schema
from formwork.schemas.errors import SchemaError
from formwork.schemas.keywords import DRAFT_KEYWORDS, UNSUPPORTED_KEYWORDS
from formwork.schemas.pointer import split_pointer
from formwork.schemas.problems import Severity

__all__ = [
    "IndentSpec", "InvalidSchemaError", "JsonSchemaOptions", "LoweredSchema", "OneOfOverlapError",
    "SchemaLoweringError", "UnsupportedSchemaError", "compile_json_schema", "lower_json_schema",
]


ROOT_RULE = "<schema root>"


@dataclass
class LoweredSchema:
    """The IR of a schema (a `Grammar` when it is recursive) plus the warnings collected in
    lenient mode."""

    node: Node | Grammar
    warnings: list[str] = field(default_factory=list)
    #: the uniqueItems pointers of the arrays tagged for the matcher (`unique_arrays`), and whether
    #: a refusal of theirs is a warning
    unique_arrays: tuple[str, ...] = ()
    lenient: bool = False
    #: the IR of those arrays (without the tag), in the same order
    unique_nodes: tuple[Node, ...] = ()


def _load(schema: Any, registry: Optional[Mapping[str, Any]], draft: Optional[str]) -> Any:
    if isinstance(schema, (bytes, bytearray)):
        schema = schema.decode("utf-8")
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise InvalidSchemaError("schema", "", f"not valid JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise InvalidSchemaError("schema", "", f"a schema is an object or a boolean, not "
                                                f"{type(schema).__name__}")
    try:
        return load_schema(schema, registry=registry, draft=draft)
    except SchemaError as exc:
        pointer = getattr(exc, "pointer", None) or ""
        raise InvalidSchemaError("schema", pointer, str(exc)) from None


def _handled_here(doc: Any, problem: Any) -> bool:
    """`unevaluated*` with no in-place applicator beside it is enforced by the lowering (it acts
    as additionalProperties / items); the schema front end flags every use."""
    if problem.keyword not in ("unevaluatedProperties", "unevaluatedItems") or "#" in problem.pointer:
        return False
    schema = doc.schema
    try:
        for token in split_pointer(problem.pointer)[:-1]:
            schema = schema[int(token)] if isinstance(schema, list) else schema[token]
    except (KeyError, IndexError, ValueError, TypeError):
        return False
    return plain_unevaluated(schema, problem.keyword)


def lower_json_schema(schema: Any, *, whitespace: WhitespaceOption = "default",
                      max_whitespace: int = 4, forbid_additional_properties: bool = False,
                      lenient: bool = False, max_nesting_depth: NestingOption = "auto",
                      registry: Optional[Mapping[str, Any]] = None,
                      draft: Optional[str] = None) -> LoweredSchema:
    """Lower a schema (dict, bool or JSON text) to grammar IR without compiling it.

    `draft` ("2020-12" or "draft-07") applies when the schema has no `$schema` (default 2020-12);
    `max_nesting_depth` is an int (0..8), None (exact) or "auto" (see `resolve_nesting_depth`).
    The cyclic garbage collector is paused meanwhile: lowering allocates many small objects and
    frees few, so its passes would re-scan the process's heap for nothing.
    """
    with paused_gc():
        return _lower(schema, whitespace, max_whitespace, forbid_additional_properties, lenient,
                      max_nesting_depth, registry, draft)


def _lower(schema: Any, whitespace: WhitespaceOption, max_whitespace: int,
           forbid_additional_properties: bool, lenient: bool, max_nesting_depth: NestingOption,
           registry: Optional[Mapping[str, Any]], draft: Optional[str]) -> LoweredSchema:
    doc = _load(schema, registry, draft)
    options = JsonSchemaOptions(whitespace, max_whitespace, forbid_additional_properties, lenient,
                                resolve_nesting_depth(max_nesting_depth, doc.schema, whitespace))
    lowerer = Lowerer(doc, options)
    open_values = lowerer.any_value.calls
    for problem in doc.unsupported():
        if _handled_here(doc, problem):
            continue
        if problem.severity is Severity.ERROR:
            lowerer.report(problem.keyword, problem.pointer, problem.reason)
        elif problem.keyword in UNSUPPORTED_KEYWORDS and \
                problem.keyword not in DRAFT_KEYWORDS[doc.draft.name]:
            # not a keyword of this draft, yet validators commonly honour it (e.g. draft-07
            # `dependencies` in a 2020-12 schema): refuse rather than silently ignore
            lowerer.report(problem.keyword, problem.pointer, UNSUPPORTED_KEYWORDS[problem.keyword])
        elif problem.severity is Severity.WARNING:
            lowerer.warnings.append(f"{problem.keyword} at {problem.pointer or '#'}: {problem.reason}")
    node = lowerer.lower_root()
    levels = options.max_nesting_depth
    if max_nesting_depth == "auto" and levels is not None and levels > SHALLOW_NESTING_DEPTH and \
            lowerer.any_value.calls > open_values and _open_value_in_product(lowerer, node, levels):
        return _lower(schema, whitespace, max_whitespace, forbid_additional_properties, lenient,
                      SHALLOW_NESTING_DEPTH, registry, draft)
    if lowerer.rules:  # $ref cycles or unbounded any-JSON: a recursive grammar
        node = Grammar({**lowerer.rules, ROOT_RULE: node}, ROOT_RULE)
    return LoweredSchema(node, lowerer.warnings, tuple(lowerer.unique_arrays), options.lenient,
                         tuple(lowerer.unique_nodes))


def _open_value_in_product(lowerer: Lowerer, root: Node, levels: int) -> bool:
    """Whether an open value of `levels` lies inside a product of `root`: only the products the
    lowering recorded can hold one (a walk of `root` stops there: some, such as the elements of an
    empty array language, are built and dropped)."""
    any_value = lowerer.any_value
    return any_value.in_products(lowerer.value_products, levels) and any_value.in_product(root, levels)


def compile_json_schema(schema: Any, vocab: Any, *, whitespace: WhitespaceOption = "default",
                        max_whitespace: int = 4, forbid_additional_properties: bool = False,
                        lenient: bool = False, max_nesting_depth: NestingOption = "auto",
                        registry: Optional[Mapping[str, Any]] = None, draft: Optional[str] = None,
                        compiler: Any = None) -> Any:
    """Compile a JSON Schema into a `CompiledGrammar` for `vocab`.

    `compiler` is a `GrammarCompiler` (default: the vocabulary's shared one); its budget and token
    mask cache are used, and when its cache is enabled compiled grammars are kept by the canonical
    schema text and options.  Raises a `GrammarError` subclass naming the keyword and JSON pointer
    of anything that cannot be enforced (in lenient mode those become `.warnings` of the result).
    """
    from formwork.grammar.compiler import default_compiler

    compiler = compiler or default_compiler(vocab)
    def key() -> tuple:
        return ("json_schema", schema if isinstance(schema, str) else json.dumps(schema, sort_keys=True),
                repr(whitespace), max_whitespace, forbid_additional_properties, lenient,
                max_nesting_depth, draft, json.dumps(registry, sort_keys=True) if registry else None)

    try:
        return compile_cached(compiler, key, lambda: lower_json_schema(
            schema, whitespace=whitespace, max_whitespace=max_whitespace,
            forbid_additional_properties=forbid_additional_properties, lenient=lenient,
            max_nesting_depth=max_nesting_depth, registry=registry, draft=draft))
    except RecursionError as exc:  # a walk over the schema's IR nested past Python's stack limit
        raise GrammarBudgetError(f"the schema's grammar nests too deeply to compile ({exc})") from None
