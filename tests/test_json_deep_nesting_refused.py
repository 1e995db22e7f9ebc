"""A schema whose grammar nests past Python's stack (a chain of thousands of nested objects) is
refused with a typed `GrammarBudgetError`, never a bare `RecursionError` (as Biome's 1 MB
configuration schema and ajv's json-schema-secure did)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.errors import GrammarBudgetError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402


def nested(depth: int) -> dict:
    schema: dict = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


def test_a_schema_nested_past_the_stack_is_a_typed_refusal():
    with pytest.raises(GrammarBudgetError, match="nests too deeply"):
        compile_json_schema(nested(5000), byte_vocab())


def test_a_moderately_nested_schema_still_compiles():
    grammar = compile_json_schema(nested(40), byte_vocab())
    matcher = grammar.matcher()
    assert matcher.accept_string('{"a":' * 40 + "1" + "}" * 40) and matcher.can_terminate()
