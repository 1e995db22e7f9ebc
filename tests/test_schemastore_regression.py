"""SchemaStore schemas that used to exceed the NFA-state budget compile and are exact on a few
instances (vendored in `data/schemastore/`, see its SOURCE.md): woodpecker-ci.json, whose arrays
of steps and of commands each build their element once (`e (, e)*` ends both e at one NFA state),
and github-issue-forms.json, whose uniqueItems arrays no longer unshare the object members' grid
when their tags are stripped."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402

DATA = Path(__file__).parent / "data" / "schemastore"

ISSUE = {"name": "Bug", "description": "A bug"}
CASES: dict[str, tuple[list[Any], list[Any]]] = {  # schema file -> (valid, invalid) instances
    "woodpecker-ci.json": (
        [{"steps": {"build": {"image": "golang", "commands": ["go build", "go test"]}}},
         {"steps": [{"name": "test", "image": "node", "commands": ["npm ci", "npm test", "npm run lint"]}]},
         {"steps": {"build": {"image": "golang", "commands": ["go build"]}},
          "when": [{"event": "push"}, {"event": "tag"}]}],
        [{"steps": {"build": {"image": "golang", "commands": ["go build", 5]}}},
         {"steps": {"build": {"image": 5}}},
         {"steps": "build"},
         {"labels": {"arch": "amd64"}}]),
    "github-issue-forms.json": (
        [{**ISSUE, "body": [{"type": "markdown", "attributes": {"value": "Thanks"}}]},
         {**ISSUE, "body": [{"type": "dropdown", "id": "d", "attributes": {"label": "OS", "options": ["linux", "mac"]}}]}],
        [{**ISSUE, "body": [{"type": "dropdown", "id": "d", "attributes": {"label": "OS", "options": ["linux", "linux"]}}]},
         {**ISSUE, "body": []},
         {"name": "Bug", "body": [{"type": "markdown", "attributes": {"value": "x"}}]}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schema_compiles_and_is_exact_on_instances(name: str):
    schema = json.loads((DATA / name).read_text())
    valid, invalid = CASES[name]
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert [validator.is_valid(x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
    assert_exact(schema, valid + invalid, draft="draft-07")
