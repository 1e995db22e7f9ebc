"""Inline `oneOf`/`anyOf` subschemas kept by contents (`ref_lowerings.RefLowerings._inline_key`):
a schema repeating one under several properties (markdownlint's rule aliases) lowers to the IR it
gives when nothing inline is kept, the repeats reusing the first one's IR, whatever their annotations;
one holding `$ref`s is kept with the contents of their targets (a document whose targets differ lowers
afresh); one that sets a scope (`$id`) is never kept."""
from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema import ref_lowerings

sys.path.insert(0, str(Path(__file__).parent))
from test_json_ref_lowerings import _renumbered  # noqa: E402
from test_lowering_digests import ir_text  # noqa: E402

_BRANCHES = st.sampled_from([
    {"type": "boolean"}, {"enum": ["error", "warning"]}, {"type": "string", "maxLength": 3},
    {"type": "integer", "minimum": 1}, {"const": "a"},
    {"type": "object", "additionalProperties": False,
     "properties": {"enabled": {"type": "boolean"}, "style": {"enum": ["a", "b"]}}},
    {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 2}])
_INLINE = st.builds(lambda kw, branches, note: {"description": note, kw: branches},
                    st.sampled_from(["oneOf", "anyOf"]), st.lists(_BRANCHES, min_size=2, max_size=3),
                    st.sampled_from(["x", "y"]))


class _Hits:
    """Counts the inline lowerings `RefLowerings.begin` found kept (not `$ref` sites)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        begin = ref_lowerings.RefLowerings.begin

        def counted(lowerings: Any, lw: Any, sub: Any, depth: int) -> Any:
            recording = begin(lowerings, lw, sub, depth)
            self.count += recording is not None and recording.kept is not None \
                and recording.key[2] == "inline"
            return recording

        monkeypatch.setattr(ref_lowerings.RefLowerings, "begin", counted)


def _lowered(schema: Any, keep_inline: bool) -> tuple[str, int]:
    """`schema`'s IR text (rules renumbered) with the table empty, and the kept lowerings reused."""
    with pytest.MonkeyPatch.context() as patch:
        if not keep_inline:
            patch.setattr(ref_lowerings, "_INLINE_WORTH", frozenset())
        hits = _Hits(patch)
        ref_lowerings.clear()
        text = _renumbered(ir_text(lower_json_schema(schema).node))
    return text, hits.count


@settings(max_examples=60, deadline=None)
@given(st.lists(_INLINE, min_size=1, max_size=3), st.lists(st.integers(0, 2), min_size=2, max_size=6))
def test_repeated_inline_subschemas_lower_as_without_keeping(pool: list[dict], picks: list[int]) -> None:
    # distinct objects, as parsed JSON gives (one object twice is found by identity instead)
    properties = {f"p{i}": copy.deepcopy(pool[pick % len(pool)]) for i, pick in enumerate(picks)}
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    kept, hits = _lowered(schema, keep_inline=True)
    plain, plain_hits = _lowered(schema, keep_inline=False)
    assert kept == plain
    assert plain_hits == 0
    distinct = len({repr({k: v for k, v in p.items() if k != "description"}) for p in properties.values()})
    assert hits <= len(properties) - distinct  # a repeat at most (not when the first warned)


def test_rule_aliases_reuse_the_first_lowering() -> None:
    """markdownlint's shape: each rule's options under its code and its alias name."""
    options = {"oneOf": [{"type": "boolean"}, {"enum": ["error", "warning"]},
                         {"type": "object", "additionalProperties": False,
                          "properties": {"enabled": {"type": "boolean"},
                                         "style": {"enum": ["atx", "setext"]}}}]}
    properties = {}
    for rule in range(6):
        described = {"description": f"rule {rule // 2}", **options}
        properties[f"MD{rule}"] = described
        properties[f"alias-{rule}"] = copy.deepcopy(described)
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    kept, hits = _lowered(schema, keep_inline=True)
    assert hits == 11  # 12 subschemas, one language (descriptions are annotations)
    assert kept == _lowered(schema, keep_inline=False)[0]


@pytest.mark.parametrize("inside", [
    {"$id": "https://example.com/x", "type": "string"}, {"enum": [{"$ref": "#/$defs/d"}]},
    {"type": "object", "properties": {"$ref": {"type": "string"}}}])
def test_an_inline_subschema_setting_a_scope_or_holding_ref_data_is_not_kept(inside: dict) -> None:
    inline = {"oneOf": [{"type": "integer"}, inside]}
    schema = {"type": "object", "properties": {"a": inline, "b": copy.deepcopy(inline)},
              "$defs": {"d": {"type": "string", "maxLength": 2}}}
    kept, hits = _lowered(schema, keep_inline=True)
    assert hits == 0
    assert kept == _lowered(schema, keep_inline=False)[0]


@pytest.mark.parametrize("inside", [
    {"$ref": "#/$defs/d"}, {"type": "object", "properties": {"a": {"$ref": "#/$defs/d", "title": "t"}}}])
def test_an_inline_subschema_reaching_its_document_is_kept(inside: dict) -> None:
    inline = {"oneOf": [{"type": "integer"}, inside]}
    schema = {"type": "object", "properties": {"a": inline, "b": {**copy.deepcopy(inline), "description": "b"}},
              "$defs": {"d": {"type": "string", "maxLength": 2}}}
    kept, hits = _lowered(schema, keep_inline=True)
    assert hits == 1
    assert kept == _lowered(schema, keep_inline=False)[0]


_TARGETS = st.sampled_from([{"type": "string", "maxLength": 2}, {"type": "integer"}, {"enum": [1, "x"]},
                            {"type": "object", "properties": {"k": {"$ref": "#/$defs/e"}}},
                            {"type": "array", "items": {"$ref": "#/$defs/e"}, "maxItems": 2}])
_REF_INLINE = st.builds(lambda kw, branches, note: {"description": note, kw: branches},
                        st.sampled_from(["oneOf", "anyOf"]),
                        st.lists(st.one_of(_BRANCHES, st.sampled_from([
                            {"$ref": "#/$defs/d"}, {"$ref": "#/$defs/e", "title": "t"},
                            {"type": "array", "items": {"$ref": "#/$defs/d"}}])), min_size=2, max_size=3),
                        st.sampled_from(["x", "y"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_REF_INLINE, min_size=1, max_size=3), st.lists(st.integers(0, 2), min_size=2, max_size=4),
       st.tuples(_TARGETS, _TARGETS), st.tuples(_TARGETS, _TARGETS))
def test_inline_subschemas_with_refs_lower_as_afresh_across_documents(
        pool: list[dict], picks: list[int], defs: tuple, other_defs: tuple) -> None:
    # the same inline subschemas in two documents whose targets may differ: each lowers, after the
    # other kept its own, as it does with nothing kept
    properties = {f"p{i}": copy.deepcopy(pool[pick % len(pool)]) for i, pick in enumerate(picks)}

    def document(targets: tuple) -> dict:
        return {"type": "object", "properties": copy.deepcopy(properties), "additionalProperties": False,
                "$defs": {"d": copy.deepcopy(targets[0]), "e": copy.deepcopy(targets[1])}}

    first, second = document(defs), document(other_defs)
    fresh = [_lowered(doc, keep_inline=False)[0] for doc in (first, second)]
    ref_lowerings.clear()
    for doc, expected in [(first, fresh[0]), (second, fresh[1]), (first, fresh[0])]:
        assert _renumbered(ir_text(lower_json_schema(doc).node)) == expected


def test_a_root_holding_refs_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # walking a whole schema for its $refs buys nothing: compiled again, it is the compiled-grammar
    # cache's to find (a root without $refs costs only its serialisation, and stays kept)
    hits = _Hits(monkeypatch)
    ref_lowerings.clear()
    with_refs = {"anyOf": [{"$ref": "#/$defs/d"}, {"type": "integer"}], "$defs": {"d": {"type": "string"}}}
    for _ in range(2):
        lower_json_schema(with_refs)
    assert hits.count == 0
    for _ in range(2):
        lower_json_schema({"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert hits.count == 1
