"""SchemaStore schemas that used to be refused for their size (vendored in `data/schemastore/`, see
its SOURCE.md): mergify.json, whose lists of recursive conditions (maxItems 500) made the
context-free grammar one production per count, and gitlab-ci.json, whose member lists built a
job (an object of 39 members) once per cell that reached it, 3.27M NFA states (budget 500k)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from jsonschema import Draft7Validator, Draft202012Validator

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact, matcher_accepts  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.unique_arrays import strip_tags  # noqa: E402

DATA = Path(__file__).parent / "data" / "schemastore"

RULE = {"name": "automerge", "conditions": ["base=main"], "actions": {"label": {"add": ["merged"]}}}
MERGIFY_VALID = [
    {"pull_request_rules": [RULE]},
    {"pull_request_rules": [{**RULE, "conditions": [
        "base=main", {"or": ["label=ready", {"and": ["#approved-reviews-by>=1", {"not": {"or": ["label=wip"]}}]}]}]}]},
    {"pull_request_rules": [{**RULE, "conditions": ["label=x"] * 500}]},
]
MERGIFY_INVALID = [
    {"pull_request_rules": [{**RULE, "conditions": ["label=x"] * 501}]},
    {"pull_request_rules": [{**RULE, "conditions": [{"and": "base=main"}]}]},
    {"pull_request_rules": [{**RULE, "conditions": [{"not": ["label=wip"]}]}]},
    {"pull_request_rules": [{"name": "r", "actions": {"label": {"add": ["x"]}}}]},
    {"pull_request_rules": [{**RULE, "actions": {"label": {"add": ["x"], "colour": "red"}}}]},
]

JOB = {"stage": "build", "script": ["make"]}
GITLAB_VALID = [
    {"stages": ["build", "test"], "build-job": JOB},
    {".template": {"script": "echo hi"}, "test-job": {"script": ["make test"], "when": "delayed", "start_in": "5 minutes"}},
    {"pages": {"script": ["mkdocs build"], "artifacts": {"paths": ["public"]}}, "build-job": JOB},
    {".anchor": [1, 2], ".template": {"script": "x", "bogus": 1}, "build-job": {**JOB, "needs": ["setup"]}},
]
GITLAB_INVALID = [
    {"build-job": {**JOB, "colour": "red"}},
    {"test-job": {"script": ["make"], "when": "delayed"}},
    {"stages": "build"},
    {"pages": {"script": 5}},
    {"build-job": {**JOB, "retry": 3}},
    {"default": {"image": 5}},
]


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_mergify_compiles_and_is_exact():
    schema = _load("mergify.json")
    validator = Draft202012Validator(schema)
    assert [validator.is_valid(x) for x in MERGIFY_VALID + MERGIFY_INVALID] == \
        [True] * len(MERGIFY_VALID) + [False] * len(MERGIFY_INVALID)
    assert_exact(schema, MERGIFY_VALID + MERGIFY_INVALID)


def test_gitlab_ci_builds_within_the_nfa_budget_and_is_exact():
    """Its member lists fit the default budget (compiled here without the uniqueItems tracking,
    which these instances do not test: `compile_json_schema` refuses the schema for an anyOf of a
    job template and any value, where one '[' may open a unique array or another)."""
    schema = _load("gitlab-ci.json")
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert [validator.is_valid(x) for x in GITLAB_VALID + GITLAB_INVALID] == \
        [True] * len(GITLAB_VALID) + [False] * len(GITLAB_INVALID)
    node = strip_tags(lower_json_schema(schema).node)
    vocab = byte_vocab()
    grammar = GrammarCompiler(vocab, cache_enabled=False, budget=CompileBudget()).compile_grammar(node)
    assert grammar.dfa.nfa.num_states <= CompileBudget().max_nfa_states
    assert [matcher_accepts(grammar, x) for x in GITLAB_VALID + GITLAB_INVALID] == \
        [True] * len(GITLAB_VALID) + [False] * len(GITLAB_INVALID)
