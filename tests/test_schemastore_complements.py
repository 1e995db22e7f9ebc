"""SchemaStore schemas whose `oneOf` or `not` needs the complement of `additionalProperties` with
a subschema, of many declared members, or of `uniqueItems` beside unique arrays (vendored in
`data/schemastore/`, see its SOURCE.md): the part of each that needs it compiles and is exact on
instances chosen to fall on both sides of the complement (jsonschema's verdict is checked first).

- bitbucket-pipelines.json: a script item is one of a command, a pipe and an agent task; a pipe
  with an agent is one unless some pipe variable is neither a string nor an array of strings.
- travis.json: webhooks are a possibly secret string (or unique array of them) or exactly one
  of a boolean, a webhook object (additionalProperties false, 8 members) or a unique array of
  them; `{}` and `[{}]` are on two sides at once.
- buildkite.json: a notification is one of 8 kinds, 7 of them objects with an optional `if` and
  additionalProperties false: `{}` and `{"if": ...}` are on all of them.
- dependabot.json: an update names `directories` (a unique array) or `directory`, not both; the
  complement of `directories` is needed only beside its own uniqueItems.
"""
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

PIPE = {"pipe": "atlassian/p:1"}
UPDATE = {"package-ecosystem": "npm", "schedule": {"interval": "daily"}}
CASES: dict[str, tuple[str, list[Any], list[Any]]] = {  # (file, pointer) -> (valid, invalid)
    "bitbucket-pipelines.json#/definitions/script": (
        [[PIPE], ["make"], [{**PIPE, "variables": {"A": "x", "B": ["y"]}}],
         [{**PIPE, "agent": "a", "variables": {"A": 1}}],
         [{**PIPE, "agent": "a", "variables": {"A": "x", "B": [2]}}]],
        [[{**PIPE, "agent": "a"}], [{**PIPE, "agent": "a", "variables": {"A": "x", "B": ["y"]}}],
         [{**PIPE, "variables": {"A": 1}}], [{"agent": 1}], []]),
    "travis.json#/allOf/1/properties/notifications/properties/webhooks": (
        ["https://x.test", True, {"secure": "s"}, {"enabled": True, "urls": "https://x.test"},
         [{"enabled": True}], [{"secure": "s"}], [{"on_start": "never"}, {"enabled": False}]],
        [{}, [{}], [{"enabled": True}, {"enabled": True}], [{"secure": "s"}, {"enabled": True}],
         {"enabled": True, "secure": "s"}, {"on_start": "sometimes"}, []]),
    "buildkite.json#/definitions/buildNotify": (
        [["github_check"], [{"email": "a@b.test"}], [{"slack": "#c", "if": "build.state"}],
         [{"github_check": {"name": "n"}}], [{"github_commit_status": {"context": "c"}}],
         [{"webhook": "https://x.test"}, {"pagerduty_change_event": "k"}]],
        [[{}], [{"if": "build.state"}], [{"email": "a", "slack": "#c"}], ["other"],
         [{"email": 1}], [{"github_check": {"title": "t"}}], [{"basecamp_campfire": "u", "x": 1}]]),
    "dependabot.json#/definitions/update": (
        [{**UPDATE, "directory": "/"}, {**UPDATE, "directories": ["/a", "/b"]}],
        [{**UPDATE, "directory": "/", "directories": ["/a"]}, UPDATE,
         {**UPDATE, "directories": ["/a", "/a"]}, {**UPDATE, "directories": []},
         {**UPDATE, "directory": 1}]),
}


def _subschema(case: str) -> dict:
    """The vendored document with `$ref` to the case's pointer (draft-07: it overrides the
    root's other keywords, which stay there for the pointer to reach)."""
    name, pointer = case.split("#")
    return {**json.loads((DATA / name).read_text()), "$ref": "#" + pointer}


@pytest.mark.parametrize("case", sorted(CASES))
def test_subschema_needing_a_complement_compiles_and_is_exact(case: str):
    schema = _subschema(case)
    valid, invalid = CASES[case]
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert [validator.is_valid(x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
    assert_exact(schema, valid + invalid, draft="draft-07")


def test_whole_buildkite_document_compiles_and_is_exact():
    schema = json.loads((DATA / "buildkite.json").read_text())
    notify_all = [{"email": "a@b.test", "if": "build.state == 'failed'"}]
    valid = [{"steps": [{"command": "make", "notify": ["github_check", {"slack": "#c"}]}]},
             {"steps": ["wait"], "notify": notify_all}]
    invalid = [{"steps": [{"command": "make", "notify": [{}]}]},
               {"steps": ["wait"], "notify": [{"if": "x"}]}]
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    assert [validator.is_valid(x) for x in valid + invalid] == [True, True, False, False]
    assert_exact(schema, valid + invalid, draft="draft-07")
