"""The analysis walk in C (`schemas/native/_analysis_walk.c`) against the Python walk it replaced
(kept here only, as the reference): the same `Analysis` (sites, targets, drafts, target sites,
problems, visited), the same analyser state (reported, visits, saw_definitions) and the same error,
over every schema of tests/data, the JSON Schema Test Suite, the generated benchmark schemas and
random schema-like values."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas import analysis
from formwork.schemas.analysis import MAX_VISITS, Location, _Analyser
from formwork.schemas.deep import call_with_depth
from formwork.schemas.dialects import declared_draft, translate
from formwork.schemas.drafts import DRAFT_07_SPEC, DRAFT_2020_12_SPEC, Draft, draft_named
from formwork.schemas.errors import SchemaTooLargeError
from formwork.schemas.keywords import (DEFINITION_CONTAINERS, DRAFT_07, INSTANCE_DESCENDING,
                                       PLAIN_KEYWORDS, SUBSCHEMA_KEYWORDS, Shape)
from formwork.schemas.metaschema import check_meta_schema
from formwork.schemas.pointer import child
from formwork.schemas.refs import RefIndex, SchemaRegistry
from formwork.schemas.source import load_source_with_depth

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import DRAFT_FOLDERS, schema_like, suite_groups, suite_registry  # noqa: E402

DATA = Path(__file__).parent / "data"
GENERATED = Path(__file__).parent.parent / "benchmarks" / "schemas"

_LAYOUTS = {draft: {k: v for k, v in shapes.items() if k not in DEFINITION_CONTAINERS}
            for draft, shapes in SUBSCHEMA_KEYWORDS.items()}
_ONE, _ONE_OR_LIST, _LIST = Shape.SCHEMA, Shape.SCHEMA_OR_LIST, Shape.SCHEMA_LIST


class PythonAnalyser(_Analyser):
    """The analyser with the Python walk `_analysis_walk.c` replaced."""

    def _walk_target(self, schema: Any, location: Location, resolver: Any,
                     draft: Draft) -> list[tuple[Location, bool]]:
        found: list[tuple[Location, bool]] = []
        stack = [(schema, location, resolver, draft, False, False)]
        visited, reported, index = self.result.visited, self.reported, self.index
        visits = self.visits
        try:
            while stack:
                node, here, node_resolver, node_draft, in_unsupported, descended = stack.pop()
                visits += 1
                if visits > analysis.MAX_VISITS:
                    raise SchemaTooLargeError(f"more than {analysis.MAX_VISITS} subschema visits "
                                              "through $ref; the schema is too large to analyse")
                if not isinstance(node, dict):
                    continue
                visited.add(here)
                if not self.saw_definitions and not DEFINITION_CONTAINERS.isdisjoint(node):
                    self.saw_definitions = True
                if "$schema" in node:
                    node_draft = analysis._nested_draft(node, node_draft, index.display(here))
                name = node_draft.name
                if not in_unsupported and here not in reported:
                    reported.add(here)
                    if "$ref" in node and name == DRAFT_07 or not PLAIN_KEYWORDS[name].issuperset(node):
                        self._classify(node, here, node_draft)
                keyword = "$ref" if "$ref" in node else "$dynamicRef" if "$dynamicRef" in node else None
                if keyword is not None and self._follow(node[keyword], here, node_resolver, node_draft,
                                                        keyword):
                    found.append((here, descended))
                layout = _LAYOUTS[name]
                if layout.keys().isdisjoint(node) or name == DRAFT_07 and "$ref" in node:
                    continue
                children = []
                uri, pointer, spec = here.uri, here.pointer, node_draft.specification
                plain = PLAIN_KEYWORDS[name]
                for keyword, value in node.items():
                    shape = layout.get(keyword)
                    if shape is None:
                        continue
                    at = pointer + "/" + keyword
                    if shape is _ONE or shape is _ONE_OR_LIST and not isinstance(value, list):
                        members: Any = ((at, value),)
                    elif shape is _LIST or shape is _ONE_OR_LIST:
                        members = [(f"{at}/{i}", sub) for i, sub in enumerate(value)] \
                            if isinstance(value, list) else ()
                    elif isinstance(value, dict):
                        members = [(child(at, k), sub) for k, sub in value.items()]
                    else:
                        continue
                    skipped = None
                    descends = descended or keyword in INSTANCE_DESCENDING
                    for sub_pointer, sub in members:
                        if not isinstance(sub, (dict, bool)):
                            continue
                        if skipped is None:
                            skipped = in_unsupported or keyword not in plain and self._unsupported(
                                keyword, node, node_draft)
                        sub_resolver = node_resolver if not isinstance(sub, dict) or "$id" not in sub else \
                            index.enter(sub, node_resolver, spec)
                        children.append((sub, Location(uri, sub_pointer), sub_resolver, node_draft,
                                         skipped, descends))
                stack.extend(reversed(children))
        finally:
            self.visits = visits
        return found


def outcome(analyser_type: type[_Analyser], root: Any, draft: Draft,
            registry: SchemaRegistry | None) -> dict[str, Any]:
    """Everything one analysis (with a fresh index) leaves: the result, the analyser's state and
    the error it raised (None)."""
    analyser = analyser_type(RefIndex(root, draft, registry), root, draft)
    error = None
    try:
        call_with_depth(analyser.run, 64)
    except Exception as raised:  # noqa: BLE001 - compared, not handled
        error = (type(raised).__name__, str(raised))
    result = analyser.result
    return {
        "error": error,
        "sites": list(result.sites.items()),
        "targets": [(location, id(schema)) for location, schema in result.targets.items()],
        "target_drafts": list(result.target_drafts.items()),
        "target_sites": list(result.target_sites.items()),
        "problems": result.problems,
        "visited": result.visited,
        "reported": analyser.reported,
        "visits": analyser.visits,
        "saw_definitions": analyser.saw_definitions,
        "pending": [(location, id(schema)) for schema, location, _, _ in analyser.pending],
    }


def assert_same_walk(root: Any, draft: Draft, registry: SchemaRegistry | None = None) -> dict[str, Any]:
    got = outcome(_Analyser, root, draft, registry)
    assert got == outcome(PythonAnalyser, root, draft, registry)
    return got


def loaded(schema: Any, default: Draft, registry: SchemaRegistry | None) -> tuple[Any, Draft] | None:
    """The schema as analysis sees it (meta-schema checked, translated); None if refused first."""
    try:
        schema, _, _ = load_source_with_depth(schema)
        declared, _ = declared_draft(schema, default)
        check_meta_schema(schema, declared)
        translated, _ = translate(schema, declared)
    except Exception:  # noqa: BLE001 - refused before the analysis
        return None
    return translated, declared.target


def data_files() -> list[Path]:
    """Every JSON file under tests/data but the test suite's (its groups are cases of their own)."""
    found = []
    for path in sorted(DATA.rglob("*")):
        if not path.is_file() or "json-schema-test-suite" in path.parts or path.name == "lowering_digests.json":
            continue
        try:
            json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        found.append(path)
    return found


@pytest.mark.parametrize("path", data_files(), ids=lambda p: str(p.relative_to(DATA)))
def test_data_schemas_walk_the_same(path: Path) -> None:
    prepared = loaded(json.loads(path.read_text()), DRAFT_2020_12_SPEC, None)
    if prepared is not None:
        assert_same_walk(*prepared)


@pytest.mark.parametrize("draft", sorted(DRAFT_FOLDERS))
def test_suite_schemas_walk_the_same(draft: str) -> None:
    registry = suite_registry(draft)
    walked = 0
    for _, group in suite_groups(draft):
        prepared = loaded(group["schema"], draft_named(draft), registry)
        if prepared is not None:
            assert_same_walk(*prepared, registry)
            walked += 1
    assert walked > 50


def test_generated_schemas_walk_the_same() -> None:
    paths = sorted(GENERATED.glob("*.json"))
    assert len(paths) > 100
    for path in paths:
        prepared = loaded(json.loads(path.read_text())["schema"], DRAFT_2020_12_SPEC, None)
        assert prepared is not None, path
        assert_same_walk(*prepared)


def test_the_visit_limit_stops_both_walks_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = {"$defs": {"a": {"properties": {"x": {"$ref": "#/$defs/b"}, "y": {"$ref": "#/$defs/b"}}},
                        "b": {"items": [{"type": "string"}, {"$ref": "#/$defs/a"}]}},
              "allOf": [{"$ref": "#/$defs/a"}, {"not": {"$ref": "#/$defs/b"}}]}
    monkeypatch.setattr(analysis, "MAX_VISITS", 5)
    got = assert_same_walk(schema, DRAFT_07_SPEC)
    assert got["error"] is not None and got["error"][0] == "SchemaTooLargeError"
    assert got["visits"] == 6
    assert MAX_VISITS == 200_000


#: Hand-made schemas for the rare paths: subschemas of an unsupported keyword (a backreference
#: pattern) holding more, a nested `$schema`, `$id` scopes, draft-07 `$ref` siblings, a
#: `$dynamicRef`, map keys needing escapes, non-ASCII pointers, boolean and non-schema members.
CASES: list[tuple[Any, Draft]] = [
    ({"patternProperties": {"(a)\\1": {"properties": {"x": {"pattern": "(b)\\1", "foo": 1}},
                                        "items": {"$ref": "#/$defs/d"}}},
      "$defs": {"d": {"minimum": 1, "bar": 2}}}, DRAFT_2020_12_SPEC),
    ({"properties": {"a/b~c": {"$schema": "http://json-schema.org/draft-07/schema#",
                               "items": {"$ref": "#/properties/a~1b~0c/definitions/x", "type": "string"},
                               "definitions": {"x": {"type": "integer"}}},
                     "日本": {"$id": "http://example.com/n.json", "items": {"$ref": "#/$defs/m"},
                             "$defs": {"m": {"x-unknown": 1}}}},
      "dependentSchemas": {"~é": {"not": False}}}, DRAFT_2020_12_SPEC),
    ({"$ref": "#/definitions/a", "title": "x", "properties": {"p": {"format": "idn-email"}},
      "definitions": {"a": {"dependencies": {"a": ["b"], "c": {"required": ["d"]}},
                            "items": [{"$ref": "#"}, True, 3]}}}, DRAFT_07_SPEC),
    ({"$dynamicAnchor": "node", "items": {"$dynamicRef": "#node"}, "if": {"type": "string"},
      "else": {"$ref": "#/$defs/o"}, "$defs": {"o": {"$id": "http://example.com/o.json"}}},
     DRAFT_2020_12_SPEC),
    ({"$ref": "http://example.com/o.json", "$defs": {
        "o": {"$id": "http://example.com/o.json", "$dynamicAnchor": "node", "items": {"$dynamicRef": "#node"}},
        "p": {"$id": "http://example.com/p.json", "$dynamicAnchor": "node"}}}, DRAFT_2020_12_SPEC),
    ({"allOf": [{"$schema": "http://json-schema.org/draft-04/schema#"}]}, DRAFT_2020_12_SPEC),
]


@pytest.mark.parametrize("schema, draft", CASES, ids=range(len(CASES)))
def test_hand_made_schemas_walk_the_same(schema: Any, draft: Draft) -> None:
    assert_same_walk(schema, draft)


_KEYWORDS = ["$ref", "$dynamicRef", "$dynamicAnchor", "$schema", "$id", "$defs", "definitions",
             "properties", "patternProperties", "additionalProperties", "items", "prefixItems",
             "additionalItems", "allOf", "anyOf", "not", "if", "then", "dependencies", "dependentSchemas",
             "contains", "unevaluatedProperties", "type", "format", "pattern", "uniqueItems", "a~/b", "a~b", "é", "日本",
             "(a)\\1"]
_STRINGS = ["#", "#/$defs/a", "#/definitions/a", "#/properties/a~1b", "#/items", "#/allOf/0", "#node",
            "http://localhost:1234/integer.json", "https://json-schema.org/draft/2020-12/schema",
            "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#",
            "http://example.com/x.json", "node", "string", "ipv4", "a(b)\\1"]


@settings(max_examples=400, deadline=None)
@given(schema_like(_STRINGS, _KEYWORDS), st.sampled_from([DRAFT_2020_12_SPEC, DRAFT_07_SPEC]))
def test_random_schema_like_values_walk_the_same(schema: Any, draft: Draft) -> None:
    try:
        RefIndex(schema, draft, None)
    except Exception:  # noqa: BLE001 - no index: nothing to walk
        return
    assert_same_walk(schema, draft)
