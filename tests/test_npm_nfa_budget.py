"""Real npm-shipped schemas once refused at the 500k NFA-state budget (vendored in `data/npm/`,
see its SOURCE.md) compile under the default budgets and agree with jsonschema:

- Angular's ng-new schema.json: `aiConfig` is a unique array over an 8-value enum, whose sets of
  items seen were built once per order of the items (`unique_items`: each set's rest shared).
- Swagger 1.2 operationObject.json: its member lists sit under a rule (`dataTypeBase.json` is
  recursive through `items`), and inlining the rule dropped their shared marks (`inline_rules`,
  `cfg.productions`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import matcher_accepts  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

NPM = Path(__file__).parent / "data" / "npm"


def _load(name: str) -> dict:
    return json.loads((NPM / name).read_text())


def _compile(schema: dict, registry: dict | None = None):
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())
    return compile_json_schema(schema, byte_vocab(), registry=registry, compiler=compiler)


def _check(grammar, validator, valid: list, invalid: list) -> None:
    assert [validator.is_valid(x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
    assert [matcher_accepts(grammar, x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)


def test_angular_ng_new_compiles_and_is_exact():
    schema = _load("ng-new.schema.json")
    base = {"name": "app", "version": "21.0.0"}
    valid = [base, {**base, "aiConfig": []}, {**base, "aiConfig": ["claude", "cursor", "none"]},
             {**base, "aiConfig": ["agents", "windsurf", "jetbrains", "cursor", "claude", "copilot",
                                   "gemini", "none"]},
             {**base, "style": "scss", "commit": {"name": "a", "email": "a@b.test"}}]
    invalid = [{**base, "aiConfig": ["claude", "claude"]},
               {**base, "aiConfig": ["none", "gemini", "none"]}, {**base, "aiConfig": ["emacs"]},
               {**base, "aiConfig": "claude"}, {"name": "app"}, {**base, "style": "stylus"}]
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    _check(_compile(schema), validator, valid, invalid)


def test_swagger_operation_object_compiles_and_is_exact():
    schema = _load("operationObject.json")
    docs = [_load(f"{name}.json") for name in
            ("dataTypeBase", "parameterObject", "authorizationObject", "oauth2GrantType")]
    registry = {doc["id"].split("#")[0]: doc for doc in docs}
    resources = Registry().with_resources(
        (uri, Resource.from_contents(doc, DRAFT4)) for uri, doc in registry.items())
    # members in the grammar's order (dataTypeBase's, then the operation's: spellings try few orders)
    param = {"type": "string", "paramType": "query", "name": "id"}
    head = {"type": "Pet", "method": "GET"}
    op = {**head, "nickname": "getPet", "parameters": [param]}
    valid = [op, {**head, "nickname": "getPet", "parameters": []},
             {**op, "responseMessages": [{"code": 404, "message": "not found"}],
              "produces": ["application/json", "text/plain"], "deprecated": "true"},
             {**head, "summary": "s" * 120, "nickname": "getPet",
              "authorizations": {"oauth2": [{"scope": "read"}]}, "parameters": []},
             {"type": "array", "items": {"type": "integer", "format": "int32"}, "method": "GET",
              "nickname": "getPet", "parameters": []}]
    invalid = [{**op, "method": "FETCH"}, {**op, "nickname": "get pet"}, {"method": "GET", "nickname": "x"},
               {**op, "produces": ["a/b", "a/b"]}, {**op, "responseMessages": [{"code": 600, "message": "m"}]},
               {**head, "summary": "s" * 121, "nickname": "getPet", "parameters": []},
               {**op, "parameters": [{**param, "type": "File"}]},
               {"type": "string", "$ref": "Pet", "method": "GET", "nickname": "getPet", "parameters": []}]
    validator = jsonschema.Draft4Validator(schema, registry=resources)
    _check(_compile(schema, registry), validator, valid, invalid)
