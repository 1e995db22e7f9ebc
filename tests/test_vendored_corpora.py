"""The vendored real-world corpora (kubernetes, bfcl, github-npm): their build scripts' rewrites
and the integrity of the files they wrote, and how `corpus.py` resolves one package's `$ref`s."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "benchmarks" / "corpora"
sys.path.insert(0, str(ROOT / "benchmarks"))
import corpus  # noqa: E402


def _build_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"build_{name.replace('-', '_')}",
                                                  CORPORA / name / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


KUBERNETES = _build_module("kubernetes")
BFCL = _build_module("bfcl")
GITHUB_NPM = _build_module("github-npm")


def _refs(node: Any) -> list[str]:
    """Every string-valued `$ref` in `node`."""
    if isinstance(node, dict):
        return [r for k, v in node.items() for r in ([v] if k == "$ref" and isinstance(v, str) else _refs(v))]
    if isinstance(node, list):
        return [r for item in node for r in _refs(item)]
    return []


# ---------------------------------------------------------------------- kubernetes
def test_standalone_copies_only_the_reached_definitions() -> None:
    shared = {"A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
              "B": {"items": {"$ref": "#/$defs/A"}},  # a cycle back to A
              "C": {"type": "string"},  # not reached
              "Props": {"properties": {"$ref": {"type": "string"}}}}
    kind = {"properties": {"a": {"$ref": "/api/_definitions.json#/$defs/A"},
                           "p": {"$ref": "/api/_definitions.json#/$defs/Props"}}}
    out = KUBERNETES.standalone(kind, shared)
    assert out["properties"]["a"] == {"$ref": "#/$defs/A"}
    assert sorted(out["$defs"]) == ["A", "B", "Props"]
    assert out["$defs"]["B"] == {"items": {"$ref": "#/$defs/A"}}
    assert out["$defs"]["Props"]["properties"]["$ref"] == {"type": "string"}  # a property, kept


def test_vendored_kubernetes_schemas_are_closed_and_minimal() -> None:
    files = sorted(CORPORA.joinpath("kubernetes").glob("*.json"))
    assert [f.stem for f in files] == sorted(KUBERNETES.KINDS)
    for path in files:
        schema = json.loads(path.read_text())
        defs = schema.get("$defs", {})
        reached, todo = set(), _refs({k: v for k, v in schema.items() if k != "$defs"})
        while todo:
            ref = todo.pop()
            assert ref.startswith("#/$defs/"), (path.name, ref)
            name = ref[len("#/$defs/"):]
            assert name in defs, (path.name, name)
            if name not in reached:
                reached.add(name)
                todo += _refs(defs[name])
        assert reached == set(defs), path.name


# ---------------------------------------------------------------------- bfcl
GORILLA_TYPES = st.sampled_from(sorted(BFCL.JSON_TYPES) + ["unknown"])


@st.composite
def gorilla_schemas(draw: st.DrawFn, depth: int = 3) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": "d"}
    if draw(st.booleans()):
        schema["type"] = draw(GORILLA_TYPES)
    if depth and draw(st.booleans()):
        schema["properties"] = draw(st.dictionaries(st.sampled_from("abc"), gorilla_schemas(depth - 1),
                                                    max_size=2))
    if depth and draw(st.booleans()):
        schema["items"] = draw(gorilla_schemas(depth - 1))
    return schema


def _types(schema: dict[str, Any]) -> list[Any]:
    nested = [*schema.get("properties", {}).values(),
              *(schema[k] for k in ("items", "additionalProperties") if isinstance(schema.get(k), dict))]
    return [schema.get("type")] + [t for s in nested for t in _types(s)]


@given(gorilla_schemas())
def test_converted_leaves_only_json_schema_types(schema: dict[str, Any]) -> None:
    out = BFCL.converted(schema)
    assert set(_types(out)) <= {"integer", "number", "string", "boolean", "array", "object"}
    jsonschema.Draft202012Validator.check_schema(out)
    if schema.get("type") == "float":
        assert out["format"] == "float" and out["description"].endswith("float type value.")


def test_converted_maps_gorilla_names() -> None:
    got = BFCL.converted({"type": "dict", "properties": {
        "xs": {"type": "tuple", "items": {"type": "list", "items": {"type": "dict", "properties": {
            "f": {"type": "float", "description": "f."}}}}},
        "v": {"type": "any"}, "w": {"description": "no type"}}})
    assert got["type"] == "object"
    assert got["properties"]["xs"]["items"]["items"]["properties"]["f"] == {
        "type": "number", "format": "float", "description": "f. This is a float type value."}
    assert got["properties"]["v"]["type"] == got["properties"]["w"]["type"] == "string"


def test_vendored_bfcl_schemas_are_distinct_json_schemas() -> None:
    entries = corpus.bfcl_entries()
    assert len(entries) == 300 and len({e.name for e in entries}) == 300
    assert len({json.dumps(e.schema, sort_keys=True) for e in entries}) == 300
    for entry in entries:
        jsonschema.Draft202012Validator.check_schema(entry.schema)
        assert entry.schema["type"] == "object"
        assert set(_types(entry.schema)) <= {"integer", "number", "string", "boolean", "array", "object"}


# ---------------------------------------------------------------------- github-npm
def test_package_registry_resolves_relative_and_id_references(tmp_path: Path) -> None:
    docs = {tmp_path / "main.json": {"$id": "http://x.org/s/main.json",
                                     "properties": {"a": {"$ref": "sub/a.json#/definitions/t"},
                                                    "b": {"$ref": "http://x.org/b"}}},
            tmp_path / "sub" / "a.json": {"definitions": {"t": {"$ref": "../c.json"}}},
            tmp_path / "b.json": {"$id": "http://x.org/b", "type": "string"},
            tmp_path / "c.json": {"type": "integer"},
            tmp_path / "unused.json": {"$id": "http://x.org/unused"}}
    got = corpus.package_registry(tmp_path / "main.json", docs)
    assert got == {"http://x.org/s/sub/a.json": docs[tmp_path / "sub" / "a.json"],
                   "http://x.org/b": docs[tmp_path / "b.json"],
                   "http://x.org/s/c.json": docs[tmp_path / "c.json"]}


def test_vendored_github_npm_files_match_the_package_list() -> None:
    root = CORPORA / "github-npm"
    listed = {f"{p.folder}/{f}" for p in GITHUB_NPM.PACKAGES for f in p.files}
    assert {e.name for e in corpus.github_npm_entries()} == listed
    source = (root / "SOURCE.md").read_text()
    for package in GITHUB_NPM.PACKAGES:
        assert f"| `{package.name}` | {package.version} |" in source
        for name in package.licences:
            assert (root / "licenses" / f"{name}.{package.folder}").stat().st_size > 0
