"""Helpers for the exactness property tests of JSON Schema keywords: the matcher accepts a compact
spelling of an instance exactly when `jsonschema` says it is valid (the spellings of
`conftest_grammar_json.spellings`: any member order, since the grammar fixes one)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab, spellings  # noqa: E402

from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

VALIDATORS = {"2020-12": jsonschema.Draft202012Validator, "draft-07": jsonschema.Draft7Validator}


def matcher_accepts(grammar: Any, instance: Any) -> bool:
    """Whether the matcher accepts one of the instance's compact spellings."""
    for text in spellings(instance):
        m = grammar.matcher()
        if m.accept_string(text) and m.can_terminate():
            return True
    return False


def assert_exact(schema: Any, instances: list[Any], draft: str = "2020-12", **options: Any) -> None:
    """Compile `schema` (with `options`) and check every instance against jsonschema's verdict."""
    grammar = compile_json_schema(schema, byte_vocab(), draft=draft, **options)
    cls = VALIDATORS[draft]
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)  # formwork asserts formats
    for instance in instances:
        expected = validator.is_valid(instance)
        got = matcher_accepts(grammar, instance)
        assert got == expected, (f"schema {json.dumps(schema)}: instance {json.dumps(instance)} "
                                 f"is {'valid' if expected else 'invalid'} but the matcher "
                                 f"{'accepts' if got else 'rejects'} it")
