"""Whole SchemaStore documents that session 13 refused at the state budgets (bitbucket-pipelines.json:
> 500k NFA states; dependabot.json: > 100k DFA states) compile under the default budgets and agree
with jsonschema on instances from both sides (vendored in `data/schemastore/`, see its SOURCE.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from jsonschema import Draft7Validator

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import matcher_accepts  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

DATA = Path(__file__).parent / "data" / "schemastore"
UPDATE = {"package-ecosystem": "npm", "directory": "/", "schedule": {"interval": "daily"}}
CASES = {  # file -> (valid, invalid), members in the schemas' order
    "bitbucket-pipelines.json": (
        [{"pipelines": {"default": [{"step": {"script": ["make"]}}]}},
         {"pipelines": {"default": [{"step": {"name": "b", "script": ["make", {"pipe": "atlassian/p:1"}]}}],
                        "branches": {"main": [{"step": {"script": ["x"]}}]}}},
         {"image": "node:20", "pipelines": {"default": [{"parallel": [{"step": {"script": ["a"]}},
                                                                      {"step": {"script": ["b"]}}]}]}}],
        [{"pipelines": {"default": [{"step": {"script": []}}]}}, {"pipelines": {"default": "make"}},
         {"pipelines": {"default": [{"step": {"script": ["make"], "max-time": 0}}]}}]),
    "dependabot.json": (
        [{"version": 2, "updates": [UPDATE]},
         {"version": 2, "updates": [{"package-ecosystem": "pip", "directories": ["/a", "/b"],
                                     "schedule": {"interval": "weekly", "day": "monday"}}]}],
        [{"version": 2, "updates": [{**UPDATE, "directories": ["/a"]}]},
         {"version": 2, "updates": [{"package-ecosystem": "npm", "directories": ["/a", "/a"],
                                     "schedule": {"interval": "daily"}}]},
         {"version": 1, "updates": [UPDATE]}, {"version": 2, "updates": [{**UPDATE, "package-ecosystem": "cobol"}]},
         {"version": 2, "updates": [{**UPDATE, "schedule": {"interval": "hourly"}}]}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_whole_document_compiles_within_the_default_budgets_and_is_exact(name: str):
    schema = json.loads((DATA / name).read_text())
    valid, invalid = CASES[name]
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    expected = [True] * len(valid) + [False] * len(invalid)
    assert [validator.is_valid(x) for x in valid + invalid] == expected
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())
    grammar = compile_json_schema(schema, byte_vocab(), draft="draft-07", compiler=compiler)
    assert [matcher_accepts(grammar, x) for x in valid + invalid] == expected
