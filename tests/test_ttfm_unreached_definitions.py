"""Unreached definitions are reported exactly as a full scan would report them.

The analysis walks a schema once; it now notes, while walking, whether any subschema it visits
holds `$defs`/`definitions`, and reports unreached definitions only then (instead of scanning the
whole document again for such a key).  The reference here runs the report for every schema.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from formwork.schemas import analysis, load_schema

SCHEMAS = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"

BACKREF = {"type": "string", "pattern": "(x)\\1"}  # a backreference: refused

CASES: list[Any] = [
    {"$defs": {"unused": {"type": "object", **BACKREF}}, "type": "integer"},
    {"type": "object", "properties": {"a": {"$defs": {"u": {"pattern": "(a)\\1"}}, "type": "string"}}},
    {"$schema": "http://json-schema.org/draft-07/schema#",
     "properties": {"a": {"$ref": "#/definitions/s", "definitions": {"x": {"pattern": "(b)\\1"}}}},
     "definitions": {"s": {"type": "string"}}},
    {"$defs": {"outer": {"$defs": {"inner": BACKREF}}}},
    {"type": "object", "const": {"$defs": {"not": BACKREF}}},
    {"anyOf": [{"type": "null"}, {"items": {"$defs": {"u": BACKREF}}}]},
    {"type": "string"},
]


def _unreached(schema: Any) -> list[str]:
    return sorted(str(p) for p in load_schema(schema)._analysis.unreached)


def _all_schemas() -> list[Any]:
    return CASES + [json.loads(p.read_text())["schema"] for p in sorted(SCHEMAS.glob("*.json"))]


def test_unreached_definitions_match_the_full_report(monkeypatch: pytest.MonkeyPatch) -> None:
    got = [_unreached(s) for s in _all_schemas()]
    with monkeypatch.context() as m:
        real = analysis._Analyser.run

        def run(self: Any) -> Any:
            out = real(self)
            self.saw_definitions = True
            return out

        m.setattr(analysis._Analyser, "run", run)
        want = [_unreached(s) for s in _all_schemas()]
    assert got == want
    assert any(got[:len(CASES)]), "the hand-made cases report some unreached definitions"


@pytest.mark.parametrize("schema", CASES[:4] + [CASES[5]], ids=range(5))
def test_each_hand_made_definition_case_reports(schema: Any) -> None:
    assert _unreached(schema), schema


def test_loading_leaves_the_unreached_report_until_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    # compiling never reads the report: loading must not walk the unreached definitions
    calls = []
    real = analysis.unreached_definitions

    def counted(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(analysis, "unreached_definitions", counted)
    document = load_schema(CASES[0])
    assert not calls
    infos = [p for p in document.problems() if "no $ref reaches" in p.reason]
    assert len(calls) == 1 and [p.pointer for p in infos] == ["/$defs/unused/pattern"]
    assert document._analysis.unreached == infos
    assert len(calls) == 1  # kept once made
