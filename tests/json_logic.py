"""Helpers for the property tests of `not`, `if`/`then`/`else` and overlapping `oneOf`: random
small schemas over a small value domain, and the check that the matcher accepts an instance
exactly when `jsonschema` says it is valid.

An instance counts as accepted when one of its equivalent spellings is (`spellings`: member order,
``1.0`` as ``1``; the grammar emits declared members in schema order and canonical numbers), and as
rejected only when every spelling is.  A schema whose language is empty cannot be compiled
(`GrammarError`); then no instance of the domain may be valid.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import VALIDATORS, matcher_accepts  # noqa: E402

from formwork.grammar import GrammarError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

EMPTY_LANGUAGE = "the constraint matches no string at all"

SCALARS = [None, True, False, 0, 1, 2, -1, 2.0, 1.5, "", "a", "ab", "b"]
CONTAINERS = [[], [1], ["a"], [1, "a"], [[1]], [1, 2, 3], {}, {"a": 1}, {"b": "a"},
              {"a": "a", "b": 1}, {"a": {"a": 1}}, {"kind": "a"}, {"kind": "b", "a": 1},
              {"kind": "a", "b": "ab"}, {"kind": 1, "a": True}]
INSTANCES = SCALARS + CONTAINERS

NAMES = st.sampled_from(["a", "b", "kind"])
VALUES = st.sampled_from(INSTANCES)
SMALL = st.integers(0, 3)
TYPES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])

LEAVES = st.one_of(
    st.builds(lambda t: {"type": t}, TYPES),
    st.builds(lambda ts: {"type": ts}, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
    st.builds(lambda v: {"const": v}, VALUES),
    st.builds(lambda vs: {"enum": vs}, st.lists(VALUES, min_size=1, max_size=3)),
    st.builds(lambda k, n: {k: n}, st.sampled_from(["minimum", "maximum", "exclusiveMinimum",
                                                    "exclusiveMaximum"]), st.integers(-1, 2)),
    st.builds(lambda k, n: {k: n}, st.sampled_from(["minLength", "maxLength", "minItems",
                                                    "maxItems", "minProperties",
                                                    "maxProperties"]), SMALL),
    st.sampled_from([{"multipleOf": 2}, {"pattern": "^a"}, {"pattern": "b"}, True, False, {},
                     {"type": "string", "pattern": "^a+$"}]),
    st.builds(lambda ns: {"required": ns}, st.lists(NAMES, min_size=1, max_size=2, unique=True)),
)


def _extend(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(lambda n, s: {"properties": {n: s}}, NAMES, inner),
        st.builds(lambda n, s: {"properties": {n: s}, "required": [n]}, NAMES, inner),
        st.builds(lambda ps: {"properties": ps, "additionalProperties": False},
                  st.dictionaries(NAMES, inner, max_size=2)),
        st.builds(lambda ps, s: {"properties": ps, "additionalProperties": s},
                  st.dictionaries(NAMES, inner, max_size=2), inner),
        st.builds(lambda p, s, more: {"patternProperties": {p: s}, **more},
                  st.sampled_from(["^k", "b", "^(a|b)$"]), inner,
                  st.sampled_from([{}, {"additionalProperties": {"type": "integer"}},
                                   {"properties": {"a": {"type": "string"}}}])),
        st.builds(lambda ss: {"prefixItems": ss}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda ss, s: {**({"prefixItems": ss} if ss else {}), "items": s},
                  st.lists(inner, max_size=2), inner),
        st.builds(lambda s: {"not": s}, inner),
        st.builds(lambda a, b: {"allOf": [a, b]}, inner, inner),
        st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
    )


#: Subschemas whose complement formwork builds exactly.
NEGATABLE = st.recursive(LEAVES, _extend, max_leaves=4)

#: `if` conditions decidable on a finite part of the instance.
CONDITIONS = st.one_of(
    st.builds(lambda t: {"type": t}, TYPES),
    st.builds(lambda v, req: {"properties": {"kind": {"const": v}}, **req},
              st.sampled_from(["a", "b", 1]), st.sampled_from([{}, {"required": ["kind"]}])),
    LEAVES,
)


def assert_agrees(schema: Any, instances: list[Any] = INSTANCES, draft: str = "2020-12") -> None:
    """Compile `schema`; each instance must be accepted exactly when it is valid."""
    cls = VALIDATORS[draft]
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    try:
        grammar = compile_json_schema(schema, byte_vocab(), draft=draft)
    except GrammarError as exc:
        if str(exc) != EMPTY_LANGUAGE:
            raise
        valid = [i for i in instances if validator.is_valid(i)]
        assert valid == [], f"schema {json.dumps(schema)} compiled to nothing, yet {valid} are valid"
        return
    for instance in instances:
        expected = validator.is_valid(instance)
        got = matcher_accepts(grammar, instance)
        assert got == expected, (f"schema {json.dumps(schema)}: instance {json.dumps(instance)} "
                                 f"is {'valid' if expected else 'invalid'} but the matcher "
                                 f"{'accepts' if got else 'rejects'} it")
