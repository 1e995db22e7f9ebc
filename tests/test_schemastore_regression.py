"""A SchemaStore schema that used to exceed the NFA-state budget compiles and is exact on a few
instances: woodpecker-ci.json (vendored in `data/schemastore/`, see its SOURCE.md), whose arrays of
steps and of commands each build their element once (`e (, e)*` ends both e at one NFA state)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from jsonschema import Draft7Validator

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402

SCHEMA = Path(__file__).parent / "data" / "schemastore" / "woodpecker-ci.json"

VALID = [
    {"steps": {"build": {"image": "golang", "commands": ["go build", "go test"]}}},
    {"steps": [{"name": "test", "image": "node", "commands": ["npm ci", "npm test", "npm run lint"]}]},
    {"steps": {"build": {"image": "golang", "commands": ["go build"]}},
     "when": [{"event": "push"}, {"event": "tag"}]},
]
INVALID = [
    {"steps": {"build": {"image": "golang", "commands": ["go build", 5]}}},
    {"steps": {"build": {"image": 5}}},
    {"steps": "build"},
    {"labels": {"arch": "amd64"}},
]


def test_woodpecker_ci_compiles_and_is_exact_on_instances():
    schema = json.loads(SCHEMA.read_text())
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert [validator.is_valid(x) for x in VALID + INVALID] == [True] * len(VALID) + [False] * len(INVALID)
    assert_exact(schema, VALID + INVALID, draft="draft-07")
