"""A `oneOf` resolved once per compile (`one_of.OneOfResolutions`): a definition holding a `oneOf`
that expansion inlines under many `$ref`s is resolved once, to the same language as resolving it
at every reference, and a resolution that changed the lowerer otherwise (a warning) is not kept."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import assert_agrees  # noqa: E402

from formwork.grammar.json_schema import lower_json_schema  # noqa: E402
from formwork.grammar.json_schema import lowering, one_of  # noqa: E402

#: "on" is both a const and a short string: the branches overlap, so resolving adds exclusions
SEVERITY = {"oneOf": [{"const": "off"}, {"const": "on"}, {"type": "string", "maxLength": 2}]}


def rules(count: int, severity: dict = SEVERITY) -> dict:
    """An object of `count` members, each a nullable `$ref` to one definition holding a `oneOf`."""
    return {"$defs": {"severity": severity}, "type": "object", "additionalProperties": False,
            "properties": {f"rule{i}": {"anyOf": [{"$ref": "#/$defs/severity"}, {"type": "null"}]}
                           for i in range(count)}}


@pytest.fixture
def resolutions(monkeypatch) -> list[str]:
    """The pointers of the `oneOf`s actually resolved (not found kept)."""
    seen: list[str] = []
    resolve = one_of.resolve_one_of

    def counted(lw, sub, branches):
        seen.append(sub.pointer)
        return resolve(lw, sub, branches)

    monkeypatch.setattr(one_of, "resolve_one_of", counted)
    return seen


def test_a_one_of_under_many_refs_is_resolved_once(resolutions):
    lower_json_schema(rules(12))
    assert resolutions == ["/$defs/severity"]


def test_the_kept_resolution_lowers_as_resolving_at_every_reference(resolutions, monkeypatch):
    kept = lower_json_schema(rules(6))
    monkeypatch.setattr(lowering.Lowerer, "_one_of",
                        lambda self, sub, branches: one_of.resolve_one_of(self, sub, branches))
    afresh = lower_json_schema(rules(6))
    assert len(resolutions) == 1 + 6
    assert kept.node == afresh.node


def test_the_kept_resolution_is_exact():
    assert_agrees(rules(3), [{}, {"rule0": "off"}, {"rule0": "on"}, {"rule1": "ab"}, {"rule2": "abc"},
                             {"rule0": None, "rule1": "on", "rule2": "x"}, {"rule0": 1}, {"rule9": "on"}])


def test_a_resolution_that_changed_the_lowerer_is_not_kept(monkeypatch):
    """One that warned (or made a rule, met a cycle...) bumps `Lowerer.changes`: each reference
    then resolves afresh, and reports again."""
    seen: list[str] = []
    resolve = one_of.resolve_one_of

    def warning(lw, sub, branches):
        seen.append(sub.pointer)
        lw.report("oneOf", sub.pointer, "a warning of this resolution")  # lenient: a warning
        return resolve(lw, sub, branches)

    monkeypatch.setattr(one_of, "resolve_one_of", warning)
    lowered = lower_json_schema(rules(3), lenient=True)
    assert seen == ["/$defs/severity"] * 3
    assert lowered.warnings.count("oneOf at /$defs/severity: a warning of this resolution") == 3
