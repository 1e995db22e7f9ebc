"""Nesting of any-JSON values: exact for open schemas and the engine's json_object, bounded inside
constrained schemas by default (`BOUNDED_NESTING_DEPTH` levels, 2 under an indent policy), exact or
bounded on request."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_tokenizer, deepseek_vocab, unpack_mask  # noqa: E402

from formwork.core.grammar_backend import _compile  # noqa: E402
from formwork.grammar import GrammarCompiler, GrammarError, allocate_token_bitmask  # noqa: E402
from formwork.grammar.ir import Grammar  # noqa: E402
from formwork.grammar.json_schema import IndentSpec, compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.options import (  # noqa: E402
    BOUNDED_NESTING_DEPTH, SHALLOW_NESTING_DEPTH, is_open_schema, resolve_nesting_depth,
)


def nested(depth: int) -> dict:
    """An object `depth` containers deep, alternating objects and arrays."""
    value: object = {"leaf": [1, "x", None]}
    for i in range(depth - 2):
        value = [value, i] if i % 2 else {f"k{i}": value, "n": True}
    return {"root": value}


DEEP = json.dumps(nested(6))
DEEP_COMPACT = json.dumps(nested(6), separators=(",", ":"))
INVALID = ['{"a": [1,]}', '{"a" 1}', '{"a": {"b": 1}', "[]", '"text"', '{"a": [[[[[[1]]]]]]]}', "{'a': 1}"]


@pytest.fixture(scope="module")
def compiler():
    return GrammarCompiler(deepseek_vocab())


def accepts(grammar, text: str) -> bool:
    m = grammar.matcher()
    return m.accept_string(text) and m.can_terminate()


def test_fixture_is_six_containers_deep():
    assert DEEP.count("{") + DEEP.count("[") >= 6 and json.loads(DEEP) == nested(6)


OPEN_SCHEMAS = [{"type": "object"}, {}, True, {"type": ["object", "array"], "title": "t"}]


@pytest.mark.parametrize("schema", OPEN_SCHEMAS)
def test_open_schemas_are_exact_by_default(compiler, schema):
    g = compile_json_schema(schema, compiler.vocab, compiler=compiler)
    assert accepts(g, DEEP) and accepts(g, "[" * 40 + "]" * 40) != (schema == {"type": "object"})
    for text in INVALID:
        if text in ("[]", '"text"') and schema != {"type": "object"}:
            continue  # any JSON value, not only objects
        assert not accepts(g, text), text


def test_constrained_schemas_keep_the_bounded_default(compiler):
    schema = {"type": "object", "properties": {"a": {}}, "required": ["a"]}
    g = compile_json_schema(schema, compiler.vocab, compiler=compiler)
    assert not isinstance(lower_json_schema(schema).node, Grammar)
    depth = BOUNDED_NESTING_DEPTH
    assert accepts(g, '{"a": ' + "[" * depth + "1" + "]" * depth + "}")
    assert accepts(g, json.dumps({"a": nested(depth)["root"]})) and not accepts(g, '{"a": ' + DEEP + "}")
    assert not accepts(g, '{"a": ' + "[" * (depth + 1) + "1" + "]" * (depth + 1) + "}")
    exact = compile_json_schema(schema, compiler.vocab, compiler=compiler, max_nesting_depth=None)
    assert accepts(exact, '{"a": ' + DEEP + "}") and not accepts(exact, '{"a": [1,]}')
    bounded = compile_json_schema({"type": "object"}, compiler.vocab, compiler=compiler, max_nesting_depth=2)
    assert not accepts(bounded, DEEP)


def test_auto_resolution():
    assert resolve_nesting_depth("auto", {"type": "object"}, "default") is None
    assert resolve_nesting_depth("auto", True, "compact") is None
    assert resolve_nesting_depth("auto", {"type": "object"}, IndentSpec(2)) == SHALLOW_NESTING_DEPTH
    assert resolve_nesting_depth("auto", {"properties": {}}, IndentSpec(2)) == SHALLOW_NESTING_DEPTH
    assert resolve_nesting_depth("auto", {"type": "object", "maxProperties": 3}, "default") == BOUNDED_NESTING_DEPTH
    assert resolve_nesting_depth(1, {}, "default") == 1
    assert resolve_nesting_depth(None, {"properties": {}}, "free") is None
    assert not is_open_schema(False) and not is_open_schema({"$ref": "#"})
    with pytest.raises(GrammarError, match="max_nesting_depth"):
        lower_json_schema({}, max_nesting_depth="deep")


def test_indented_open_schema_stays_bounded(compiler):
    g = compile_json_schema({"type": "object"}, compiler.vocab, compiler=compiler, whitespace=IndentSpec(2))
    assert accepts(g, json.dumps({"a": [1]}, indent=2)) and not accepts(g, json.dumps(nested(6), indent=2))


@pytest.mark.parametrize("compact", [False, True])
def test_engine_json_object_is_exact(compiler, compact):
    spec = {"json_object": True, "disable_any_whitespace": compact}
    g = _compile(spec, compiler.vocab, compiler)
    assert accepts(g, DEEP_COMPACT) and accepts(g, DEEP) != compact
    for text in INVALID:
        assert not accepts(g, text), text


def test_engine_json_object_masks_allow_deep_tokens(compiler):
    """Token by token, as the engine drives it: every token of a deep object is in the mask."""
    g = _compile({"json_object": True}, compiler.vocab, compiler)
    ids = deepseek_tokenizer().encode(DEEP, add_special_tokens=False).ids
    m = g.matcher()
    bitmask = allocate_token_bitmask(1, compiler.vocab.vocab_size)
    for token in ids:
        m.fill_next_token_bitmask(bitmask, 0)
        assert unpack_mask(bitmask[0], compiler.vocab.vocab_size)[token]
        assert m.accept_token(token)
    m.fill_next_token_bitmask(bitmask, 0)
    stops = list(compiler.vocab.stop_token_ids)
    assert unpack_mask(bitmask[0], compiler.vocab.vocab_size)[stops].all()


def test_recursive_schemas_share_terminal_automata(compiler):
    """Two compilations of exact schemas (compiled-grammar cache off) reuse the terminal DFAs."""
    uncached = GrammarCompiler(compiler.vocab)
    uncached.cache_enabled = False
    schema = {"type": "object", "properties": {"id": {"type": "integer"}, "extra": {}}}
    first, second = (compile_json_schema(schema, compiler.vocab, compiler=uncached, max_nesting_depth=None)
                     for _ in range(2))
    assert first is not second and first.dfa is not second.dfa
    assert all(a is b for a, b in zip(first.dfa.builder.terminals, second.dfa.builder.terminals, strict=True))
    assert accepts(second, '{"id": 3, "extra": ' + DEEP + "}") and not accepts(second, '{"id": 3.5}')
