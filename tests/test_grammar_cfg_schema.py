"""Recursive JSON Schemas ($ref cycles) and exact any-JSON through the context-free compiler."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import unpack_mask  # noqa: E402
from conftest_grammar_cfg import accepts, complete  # noqa: E402

from formwork.grammar import GrammarCompiler, RecursionNotSupportedError, allocate_token_bitmask  # noqa: E402
from formwork.grammar.cfg import EmptyLanguageError  # noqa: E402
from formwork.grammar.dfa import START  # noqa: E402
from formwork.grammar.json_schema import IndentSpec, compile_json_schema  # noqa: E402

TREE = {"$defs": {"node": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 8},
    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 3}},
    "required": ["name"], "additionalProperties": False}}, "$ref": "#/$defs/node"}
LINKED_LIST = {"type": "object", "properties": {"value": {"type": "integer", "minimum": 0},
                                                "next": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}},
               "required": ["value", "next"], "additionalProperties": False}
EXPRESSION = {"definitions": {"expr": {"oneOf": [
    {"type": "integer"},
    {"type": "object", "properties": {"op": {"enum": ["+", "*"]},
                                      "args": {"type": "array", "items": {"$ref": "#/definitions/expr"},
                                               "minItems": 2}},
     "required": ["op", "args"], "additionalProperties": False}]}},
    "$ref": "#/definitions/expr", "$schema": "http://json-schema.org/draft-07/schema#"}


@pytest.fixture(scope="module")
def compiler(vocab):
    return GrammarCompiler(vocab)


def deep_tree(depth: int) -> dict:
    node = {"name": "leaf"}
    for i in range(depth):
        node = {"name": f"n{i}", "children": [node, {"name": "x"}]}
    return node


@pytest.mark.parametrize("schema,valid,invalid", [
    (TREE, [deep_tree(0), deep_tree(1), deep_tree(12)],
     [{"name": "a", "children": [{}]}, {"name": "a", "children": [{"name": "b", "extra": 1}]},
      {"name": "a", "children": [{"name": "b"}] * 4}, {"name": "toolongname"}]),
    (LINKED_LIST, [{"value": 1, "next": None}, {"value": 1, "next": {"value": 2, "next": {"value": 3, "next": None}}}],
     [{"value": 1}, {"value": 1, "next": {"value": -2, "next": None}}, {"value": 1, "next": {"next": None}}]),
    (EXPRESSION, [3, {"op": "+", "args": [1, {"op": "*", "args": [2, 3, 4]}]}],
     [{"op": "+", "args": [1]}, {"op": "-", "args": [1, 2]}, {"op": "+", "args": [1, {"op": "*", "args": []}]}]),
], ids=["tree", "linked-list", "expression"])
def test_recursive_schemas_are_exact(compiler, schema, valid, invalid):
    g = compile_json_schema(schema, compiler.vocab, compiler=compiler)
    for value in valid:
        jsonschema.validate(value, schema)
        assert accepts(g, json.dumps(value, separators=(",", ":"))), value
        assert accepts(g, json.dumps(value)), value  # default whitespace: one space after , and :
    for value in invalid:
        assert not jsonschema.Draft202012Validator(schema).is_valid(value)
        assert not accepts(g, json.dumps(value, separators=(",", ":"))), value


def test_cycles_without_base_case_and_indent(compiler):
    no_base = {"type": "object", "properties": {"child": {"$ref": "#"}}, "required": ["child"]}
    with pytest.raises(EmptyLanguageError):
        compile_json_schema(no_base, compiler.vocab, compiler=compiler)
    with pytest.raises(RecursionNotSupportedError, match="indent"):
        compile_json_schema(TREE, compiler.vocab, compiler=compiler, whitespace=IndentSpec(2))


def test_unbounded_any_json_is_exact(compiler):
    g = compile_json_schema({}, compiler.vocab, compiler=compiler, max_nesting_depth=None)
    deep = "[" * 60 + '{"a": null}' + "]" * 60
    assert accepts(g, deep) and not accepts(g, deep[:-1]) and not accepts(g, "[1, ]")
    bounded = compile_json_schema({}, compiler.vocab, compiler=compiler, max_nesting_depth=2)
    assert not accepts(bounded, deep)
    obj = compile_json_schema({"type": "object"}, compiler.vocab, compiler=compiler, max_nesting_depth=None)
    assert accepts(obj, '{"a": {"b": {"c": {"d": [[[[]]]]}}}}') and not accepts(obj, "[]")


@settings(deadline=None, max_examples=16, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(["tree", "linked-list", "expression"]))
def test_random_walks_validate(compiler, vocab, data, which):
    schema = {"tree": TREE, "linked-list": LINKED_LIST, "expression": EXPRESSION}[which]
    g = compile_json_schema(schema, vocab, compiler=compiler)
    m = g.matcher(max_step_seconds=10.0)  # generous: the 2-core box is shared
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    text = b""
    for _ in range(data.draw(st.integers(1, 24), label="steps")):
        m.fill_next_token_bitmask(bitmask, 0)
        allowed = unpack_mask(bitmask[0], vocab.vocab_size)
        allowed[list(vocab.stop_token_ids)] = False
        ids = np.flatnonzero(allowed)
        if not len(ids):
            break
        token = int(rng.choice(ids))
        assert m.accept_token(token)
        text += vocab.token_bytes[token]
    completed = text + complete(g.dfa, g.dfa.walk(START, text))
    jsonschema.validate(json.loads(completed), schema)
