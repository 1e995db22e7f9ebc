"""Helpers for the exactness property tests of JSON Schema keywords: the matcher accepts the
compact spelling of an instance exactly when `jsonschema` says it is valid."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

VALIDATORS = {"2020-12": jsonschema.Draft202012Validator, "draft-07": jsonschema.Draft7Validator}


def matcher_accepts(grammar: Any, instance: Any) -> bool:
    m = grammar.matcher()
    return m.accept_string(json.dumps(instance, separators=(",", ":"))) and m.can_terminate()


def assert_exact(schema: Any, instances: list[Any], draft: str = "2020-12") -> None:
    """Compile `schema` and check every instance against jsonschema's verdict."""
    grammar = compile_json_schema(schema, byte_vocab(), draft=draft)
    cls = VALIDATORS[draft]
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)  # formwork asserts formats
    for instance in instances:
        expected = validator.is_valid(instance)
        got = matcher_accepts(grammar, instance)
        assert got == expected, (f"schema {json.dumps(schema)}: instance {json.dumps(instance)} "
                                 f"is {'valid' if expected else 'invalid'} but the matcher "
                                 f"{'accepts' if got else 'rejects'} it")
