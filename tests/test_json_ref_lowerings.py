"""Lowered `$ref` sites kept across compilations (`grammar/json_schema/ref_lowerings.py`): a schema
lowered while the table holds other schemas' sites gives the IR it gives with the table empty."""
from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.errors import RecursionNotSupportedError
from formwork.grammar.ir import children
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema import ref_lowerings
from formwork.grammar.json_schema.lowering import MAX_NESTED_SCHEMAS

sys.path.insert(0, str(Path(__file__).parent))
from test_lowering_digests import ir_text  # noqa: E402

KUBERNETES = Path(__file__).resolve().parents[1] / "benchmarks" / "corpora" / "kubernetes"
DEFS = [f"D{i}" for i in range(4)]


def _fresh(schema: Any, **options: Any) -> str:
    ref_lowerings.clear()
    return ir_text(lower_json_schema(schema, **options).node)


def _renumbered(text: str) -> str:
    """`text` with its rules numbered in order of first mention.  A reused site leaves no
    within-compile memo entries for the subschemas inside it, so a later equal one (the shared
    `true` of `additionalProperties`, say) is lowered rather than found, taking a rule number:
    the rules after it are numbered one higher than afresh, with the same bodies."""
    numbers: dict[str, str] = {}
    return re.sub(r" \((\d+)\)'", lambda m: f" ({numbers.setdefault(m.group(1), str(len(numbers)))})'", text)


def _nodes(root: Any) -> set[int]:
    seen: dict[int, Any] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(children(node))
    return set(seen)


def _kept_nodes() -> set[int]:
    return {id(kept.node) for kept in ref_lowerings._KEPT.values()}


def test_kubernetes_kinds_lower_alike_with_the_table_warm() -> None:
    schemas = [json.loads(p.read_text()) for p in sorted(KUBERNETES.glob("*.json"))[:24]]
    fresh = [_fresh(s) for s in schemas]
    ref_lowerings.clear()
    for schema in schemas:  # every kind lowered once: the table holds their shared definitions
        lower_json_schema(schema)
    hits = 0
    for schema, expected in zip(schemas, fresh):
        lowered = lower_json_schema(schema).node
        hits += bool(_nodes(lowered) & _kept_nodes())
        assert ir_text(lowered) == expected
    assert hits >= len(schemas) - 2  # nearly every kind reused a kept site


_LEAVES = st.sampled_from([{"type": "string"}, {"type": "integer", "minimum": 3}, {"enum": ["a", 1]},
                           {"type": "boolean"}, {"type": "string", "maxLength": 2}])


@st.composite
def _definition(draw: st.DrawFn, index: int) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from("abcd"), min_size=1, max_size=3, unique=True))
    properties = {}
    for name in names:
        target = draw(st.sampled_from(DEFS))  # any definition: recursion included
        properties[name] = draw(st.one_of(
            _LEAVES, st.just({"$ref": f"#/$defs/{target}", "description": name}),
            st.just({"type": "array", "items": {"$ref": f"#/$defs/{target}"}, "maxItems": 2})))
    return {"type": "object", "properties": properties,
            "required": draw(st.lists(st.sampled_from(names), max_size=1)),
            "additionalProperties": draw(st.booleans())}


@st.composite
def _document(draw: st.DrawFn) -> dict[str, Any]:
    defs = {name: draw(_definition(i)) for i, name in enumerate(DEFS)}
    used = draw(st.lists(st.sampled_from(DEFS), min_size=1, max_size=3, unique=True))
    return {"type": "object", "additionalProperties": False,
            "properties": {f"p{name}": {"$ref": f"#/$defs/{name}", "title": "t"} for name in used},
            "$defs": defs}


@settings(max_examples=60, deadline=None)
@given(_document(), st.sampled_from([None, 2, "auto"]), st.data())
def test_generated_documents_lower_alike_after_related_ones(document: dict[str, Any], levels: Any,
                                                            data: st.DataObject) -> None:
    # a related document: one definition redrawn (same name, maybe other contents)
    other = copy.deepcopy(document)
    changed = data.draw(st.sampled_from(DEFS))
    other["$defs"][changed] = data.draw(_definition(DEFS.index(changed)))
    expected = []
    for schema in (document, other):
        try:
            expected.append(_fresh(schema, max_nesting_depth=levels))
        except RecursionNotSupportedError:
            expected.append(None)
    ref_lowerings.clear()
    for schema, fresh in [(document, expected[0]), (other, expected[1]), (document, expected[0])]:
        try:
            got = ir_text(lower_json_schema(schema, max_nesting_depth=levels).node)
        except RecursionNotSupportedError:
            got = None
        assert (got if got is None else _renumbered(got)) == (fresh if fresh is None else _renumbered(fresh))


def _nested(levels: int, inner: Any) -> dict[str, Any]:
    """`inner` under `levels` objects (each a distinct conjunction)."""
    for level in range(levels):
        inner = {"type": "object", "properties": {f"k{level}": inner}, "required": [f"k{level}"]}
    return inner


def test_a_kept_site_reused_deeper_is_refused_as_afresh() -> None:
    deep = _nested(MAX_NESTED_SCHEMAS - 10, {"type": "string"})
    shallow = {"type": "object", "properties": {"s": {"$ref": "#/$defs/Deep"}}, "$defs": {"Deep": deep}}
    buried = {"type": "object", "properties": {"s": _nested(20, {"$ref": "#/$defs/Deep"})},
              "$defs": {"Deep": deep}}
    ref_lowerings.clear()
    with pytest.raises(RecursionNotSupportedError):
        lower_json_schema(buried)
    lower_json_schema(shallow)
    assert ref_lowerings._KEPT  # the shallow site was kept
    with pytest.raises(RecursionNotSupportedError):
        lower_json_schema(buried)


@pytest.fixture
def roomy_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Room in the shared-mark and lexeme tables (the suite before may have filled them): an eviction
    while a test lowers would make its kept sites be lowered afresh."""
    from formwork.grammar import lexemes, shared_nodes

    monkeypatch.setattr(shared_nodes, "_MAX_MARKS", len(shared_nodes._MARK_OF) + 10_000)
    monkeypatch.setattr(lexemes, "_MAX_LEXEMES", len(lexemes._LEXEMES) + 1_000)


def test_a_reused_site_changes_later_rule_numbers_only(roomy_tables: None) -> None:
    # pD2's site (D2 -> D3, whose `additionalProperties: true` is lowered there) is reused in `other`,
    # so D0's `true` is lowered rather than found in the memo: pD1's rule is numbered one higher
    def obj(a: dict, more: bool) -> dict:
        return {"type": "object", "properties": {"a": a}, "required": [], "additionalProperties": more}

    document = {"type": "object", "additionalProperties": False,
                "properties": {f"p{d}": {"$ref": f"#/$defs/{d}", "title": "t"} for d in ("D2", "D0", "D1")},
                "$defs": {"D0": obj({"$ref": "#/$defs/D0", "description": "a"}, True),
                          "D1": obj({"type": "string"}, False),
                          "D2": obj({"$ref": "#/$defs/D3", "description": "a"}, False),
                          "D3": obj({"type": "string"}, True)}}
    other = copy.deepcopy(document)
    other["$defs"]["D1"] = obj({"$ref": "#/$defs/D1", "description": "a"}, False)
    fresh = _fresh(other, max_nesting_depth=2)
    ref_lowerings.clear()
    lower_json_schema(document, max_nesting_depth=2)
    got = ir_text(lower_json_schema(other, max_nesting_depth=2).node)
    assert got != fresh and "pD1 (13)" in got and "pD1 (12)" in fresh
    assert _renumbered(got) == _renumbered(fresh)



@pytest.mark.parametrize("table", ["shared marks", "lexemes"])
def test_kept_sites_are_lowered_afresh_after_an_eviction(table: str, monkeypatch: pytest.MonkeyPatch,
                                                         roomy_tables: None) -> None:
    # a kept site's IR holds marks of both tables; once either evicted one, the IR may hold it
    from formwork.grammar import lexemes, shared_nodes
    from formwork.grammar.ir import Bytes, repeat

    many = {"type": "object", "properties": {f"m{i}": {"type": "string", "maxLength": 3} for i in range(8)},
            "maxProperties": 4}  # shared member cells, and string lexemes
    document = {"type": "object", "properties": {"a": {"$ref": "#/$defs/Many"}}, "$defs": {"Many": many}}
    fresh = _fresh(document)
    (kept,) = ref_lowerings._KEPT.values()
    lower_json_schema(document)
    reused = ref_lowerings._KEPT[next(iter(ref_lowerings._KEPT))] is kept  # (no IR in an assertion message:
    assert reused  # a shared node's repr is exponential)
    evicting = repeat(Bytes(b"evicts the oldest entry"), 2, 3)
    if table == "shared marks":
        monkeypatch.setattr(shared_nodes, "_MAX_MARKS", len(shared_nodes._MARK_OF))
        shared_nodes.share(evicting)
    else:
        monkeypatch.setattr(lexemes, "_MAX_LEXEMES", len(lexemes._LEXEMES) - len(lexemes._PINNED))
        lexemes.lexeme(evicting)
    evicted = kept.evictions != ref_lowerings._evictions()
    assert evicted
    again = ir_text(lower_json_schema(document).node)
    (renewed,) = ref_lowerings._KEPT.values()
    afresh = renewed is not kept and renewed.evictions == ref_lowerings._evictions()
    assert afresh  # lowered afresh, kept again
    assert again == fresh


def test_a_pinned_lexeme_outlives_evictions(monkeypatch: pytest.MonkeyPatch) -> None:
    from formwork.grammar import lexemes
    from formwork.grammar.ir import Bytes, repeat
    from formwork.grammar.json_schema.strings import ANY_CONTENT

    monkeypatch.setattr(lexemes, "_MAX_LEXEMES", 1)
    for i in range(3):  # each evicts every other unpinned lexeme
        lexemes.lexeme(repeat(Bytes(b"lexeme %d" % i), 2, 3))
    assert lexemes.is_lexeme(ANY_CONTENT) and lexemes.is_open_ended(ANY_CONTENT)
    assert not lexemes.is_lexeme(repeat(Bytes(b"lexeme 1"), 2, 3))


def _site_document(name: str) -> dict[str, Any]:
    """A document whose one `$ref` site (to a definition particular to `name`) is kept."""
    return {"type": "object", "properties": {"a": {"$ref": f"#/$defs/{name}"}},
            "$defs": {name: {"type": "object", "properties": {name: {"type": "integer"}}}}}


def test_the_table_drops_the_least_recently_used_site(monkeypatch: pytest.MonkeyPatch,
                                                     roomy_tables: None) -> None:
    # a family compiled again and again keeps its sites while others come and go (a table
    # cleared when full dropped them all at once, and the family's next compile lowered afresh,
    # keeping a new entry)
    monkeypatch.setattr(ref_lowerings, "MAX_KEPT", 4)
    ref_lowerings.clear()
    family = _site_document("family")
    lower_json_schema(family)
    (kept,) = ref_lowerings._KEPT.values()
    for i in range(12):
        lower_json_schema(_site_document(f"other{i}"))
        assert len(ref_lowerings._KEPT) <= 4
        if i % 2:  # the family is compiled again every other schema: found, so used last
            lower_json_schema(family)
            assert any(entry is kept for entry in ref_lowerings._KEPT.values())
    assert b"family" not in next(iter(ref_lowerings._KEPT))[2]  # the oldest site is another's


@pytest.mark.parametrize("description", ["metadata is the standard object metadata.", "$id or $anchor in prose"])
def test_a_site_is_found_whatever_its_annotations(description: str, roomy_tables: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the Kubernetes kinds word `metadata`'s description apart: the same $ref, the same language
    def document(annotations: dict[str, Any]) -> dict[str, Any]:
        meta = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
                "additionalProperties": False}
        return {"type": "object", "properties": {"metadata": {"$ref": "#/$defs/Meta", **annotations}},
                "$defs": {"Meta": meta}}

    # (keys no draft defines, such as webpack's `tsType` or OpenAPI's `x-` extensions, are ignored too)
    other = document({"description": description, "title": "t", "default": {}, "examples": [1],
                      "tsType": "Meta", "x-order": 3})
    fresh = _fresh(other)
    ref_lowerings.clear()
    lower_json_schema(document({"description": "Standard object's metadata."}))
    begun = []
    begin = ref_lowerings.RefLowerings.begin
    monkeypatch.setattr(ref_lowerings.RefLowerings, "begin",
                        lambda self, *args: begun.append(begin(self, *args)) or begun[-1])
    assert _renumbered(ir_text(lower_json_schema(other).node)) == _renumbered(fresh)
    assert [r.kept is not None for r in begun if r is not None] == [True]  # the site was found


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([b"$", b"$id", b"$anchor", b"$dynamic", b"$recursive", b"id", b"$i",
                                 b"anchor", b"$ref", b"x", b"\x00"]), max_size=12).map(b"".join))
def test_scoped_bytes_are_those_naming_an_id_anchor_or_dynamic_reference(data: bytes) -> None:
    named = any(marker in data for marker in (b"$id", b"$anchor", b"$dynamic", b"$recursive"))
    assert ref_lowerings._scoped(data) == named
