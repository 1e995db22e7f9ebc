"""`$ref` resolution (local pointers, $defs, definitions, $anchor, $id-relative, registry and
the suite's remotes), the no-network rule, and reference cycles."""
from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas import SchemaRegistry, Severity, UnresolvableRefError, load_schema
from formwork.schemas.cycles import MAX_CYCLES
from formwork.schemas.pointer import join_pointer, to_fragment

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import remote_documents, suite_group, suite_registry  # noqa: E402

REMOTE = "http://localhost:1234/draft2020-12/"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("formwork.schemas tried to use the network")
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


# ---- lookups -----------------------------------------------------------------------------------

LOCAL = {
    "$defs": {"name": {"type": "string"}, "a/b": {"type": "integer"}, "c~d": {"type": "null"},
              "50%": {"type": "boolean"}, "no": False},
    "definitions": {"legacy": {"type": "number"}},
    "properties": {"tag": {"$anchor": "tag", "enum": ["x", "y"]}},
}


@pytest.mark.parametrize("ref, pointer", [
    ("#/$defs/name", "/$defs/name"),
    ("#/$defs/a~1b", "/$defs/a~1b"),
    ("#/$defs/c~0d", "/$defs/c~0d"),
    ("#/$defs/50%25", "/$defs/50%"),
    ("#/definitions/legacy", "/definitions/legacy"),
    ("#tag", "/properties/tag"),
    ("#/properties/tag", "/properties/tag"),
    ("#", ""),
    ("#/$defs/no", "/$defs/no"),
])
def test_local_lookups_return_the_subschema_and_its_pointer(ref, pointer):
    doc = load_schema({**LOCAL, "$ref": "#/$defs/name"})
    schema, resolver, where = doc.lookup(ref)
    assert where == pointer
    expected = doc.schema
    for token in [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]:
        expected = expected[token]
    assert schema == expected
    assert resolver is not None


@pytest.mark.parametrize("ref, message", [
    ("#/$defs/missing", "leads nowhere"),
    ("#nope", "no such anchor"),
    ("#/properties/tag/enum", "not a schema"),
    ("https://example.com/other.json", "not in the registry"),
    ("other.json#/a", "never fetches"),
])
def test_bad_lookups_are_unresolvable_ref_errors(ref, message):
    doc = load_schema(LOCAL)
    with pytest.raises(UnresolvableRefError, match=message):
        doc.lookup(ref)


def test_dangling_refs_fail_at_load_time_with_the_ref_pointer():
    with pytest.raises(UnresolvableRefError, match="example.com") as info:
        load_schema({"properties": {"a/b": {"items": {"$ref": "https://example.com/s.json"}}}})
    assert info.value.pointer == "/properties/a~1b/items/$ref"


def test_unreferenced_definitions_are_not_resolved():
    doc = load_schema({"$defs": {"unused": {"$ref": "#/nowhere"}}, "type": "string"})
    assert doc.unsupported() == []


def test_draft07_definitions_and_location_independent_ids():
    doc = load_schema({"$schema": "http://json-schema.org/draft-07/schema#",
                       "definitions": {"pos": {"$id": "#positive", "minimum": 0}},
                       "properties": {"a": {"$ref": "#positive"}, "b": {"$ref": "#/definitions/pos"}}})
    assert doc.lookup("#positive").pointer == "/definitions/pos"
    assert doc.lookup("#/definitions/pos").schema == {"$id": "#positive", "minimum": 0}


def test_id_relative_refs_and_embedded_resources():
    doc = load_schema({
        "$id": "https://example.com/root.json",
        "$defs": {"item": {"$id": "item.json", "$anchor": "it", "type": "integer",
                           "$defs": {"small": {"maximum": 9}}}},
        "properties": {"a": {"$ref": "item.json"}, "b": {"$ref": "item.json#it"},
                       "c": {"$ref": "item.json#/$defs/small"},
                       "d": {"$ref": "https://example.com/root.json#/$defs/item"}},
    })
    for ref in ("item.json", "item.json#it", "https://example.com/item.json", "#/$defs/item"):
        assert doc.lookup(ref).pointer == "/$defs/item"
    small, inner, pointer = doc.lookup("item.json#/$defs/small")
    assert (small, pointer) == ({"maximum": 9}, "/$defs/item/$defs/small")
    # the resolver returned for the embedded resource resolves relative to item.json
    assert doc.lookup("#/$defs/small", inner).pointer == "/$defs/item/$defs/small"
    item = doc.schema["$defs"]["item"]
    assert doc.lookup("#it", doc.enter(item, doc.resolver)).pointer == "/$defs/item"


def test_entering_is_idempotent_for_relative_ids():
    doc = load_schema({"$id": "https://example.com/folder/", "$defs": {"sub": {"$id": "sub/", "$defs": {
        "x": {"type": "integer"}}}}, "$ref": "sub/#/$defs/x"})
    root_scope = doc.enter(doc.schema, doc.resolver)
    assert doc.lookup("sub/#/$defs/x", root_scope).pointer == "/$defs/sub/$defs/x"
    target, resolver, _ = doc.lookup("sub/")
    inside = doc.enter(target, resolver)
    assert doc.enter(target, inside) is inside
    assert doc.lookup("#/$defs/x", inside).pointer == "/$defs/sub/$defs/x"


def test_registry_documents_by_absolute_and_relative_uri():
    registry = {"https://example.com/defs.json": {"$defs": {"id": {"type": "string",
                                                                   "format": "uuid"}}},
                "https://example.com/flag.json": True}
    doc = load_schema({"$id": "https://example.com/root.json",
                       "properties": {"id": {"$ref": "defs.json#/$defs/id"},
                                      "flag": {"$ref": "https://example.com/flag.json"}}},
                      registry=registry)
    assert doc.lookup("defs.json#/$defs/id").pointer == "https://example.com/defs.json#/$defs/id"
    assert doc.lookup("flag.json").schema is True
    assert {"https://example.com/defs.json", "https://example.com/flag.json"} <= set(doc.registry_uris)


def test_the_official_meta_schemas_resolve_offline():
    doc = load_schema({"$ref": "http://json-schema.org/draft-07/schema#"})
    assert doc.lookup("http://json-schema.org/draft-07/schema#").schema["title"] == "Core schema meta-schema"
    assert doc.has_ref_cycles  # the meta-schema is recursive


@pytest.mark.parametrize("description, ref, remote", [
    ("remote ref", None, "integer.json"),
    ("fragment within remote ref", None, "subSchemas.json"),
    ("anchor within remote ref", None, "locationIndependentIdentifier.json"),
    ("ref within remote ref", None, "subSchemas.json"),
    ("root ref in remote ref", "name-defs.json#/$defs/orNull", "name-defs.json"),
    ("remote ref with ref to defs", "ref-and-defs.json", "ref-and-defs.json"),
])
def test_suite_remote_refs_resolve_into_the_remotes(description, ref, remote):
    group = suite_group("2020-12", "refRemote.json", description)
    doc = load_schema(group["schema"], registry=suite_registry("2020-12"))
    schema, _resolver, pointer = doc.lookup(ref or group["schema"]["$ref"])
    assert pointer.startswith(REMOTE + remote + "#")
    document = remote_documents()[REMOTE + remote]
    target = document
    for token in pointer.split("#", 1)[1].split("/")[1:]:
        target = target[token]
    assert schema is not None and schema == target


def test_suite_base_uri_changes_resolve_to_folder_documents():
    group = suite_group("2020-12", "refRemote.json", "base URI change - change folder in subschema")
    doc = load_schema(group["schema"], registry=suite_registry("2020-12"))
    target = doc.normalized().target(doc.normalized().root["properties"]["list"]["$ref"])
    assert target["type"] == ["array"]
    folder = doc.normalized().target(target["items"]["$ref"])
    assert folder == {"type": ["integer"]}


# ---- pointers in refs (property) ---------------------------------------------------------------

names = st.text(alphabet=st.sampled_from("ab~/%# é\"\\"), min_size=1, max_size=6)


@settings(deadline=None, max_examples=60)
@given(st.lists(names, min_size=1, max_size=4))
def test_any_property_path_can_be_referenced_by_its_escaped_pointer(path):
    schema: dict = {"type": "string"}
    for name in reversed(path):
        schema = {"type": "object", "properties": {name: schema}}
    tokens = [t for name in path for t in ("properties", name)]
    pointer = join_pointer(tokens)
    doc = load_schema({**schema, "$defs": {"use": {"$ref": "#" + to_fragment(pointer)}}})
    target, _resolver, where = doc.lookup("#" + to_fragment(pointer))
    assert where == pointer
    assert target == {"type": "string"}


# ---- cycles ------------------------------------------------------------------------------------

def test_non_recursive_schemas_have_no_cycles():
    doc = load_schema({"$defs": {"a": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a"},
                                                                         "y": {"$ref": "#/$defs/a"}}})
    assert doc.ref_cycles() == [] and not doc.has_ref_cycles


def test_self_and_mutual_recursion_are_listed_with_their_ref_pointers():
    doc = load_schema({
        "$defs": {
            "node": {"properties": {"next": {"$ref": "#/$defs/node"}}},
            "even": {"items": {"$ref": "#/$defs/odd"}},
            "odd": {"items": {"$ref": "#/$defs/even"}},
        },
        "properties": {"list": {"$ref": "#/$defs/node"}, "parity": {"$ref": "#/$defs/even"}},
    })
    assert doc.ref_cycles() == [
        ["/$defs/even/items/$ref", "/$defs/odd/items/$ref"],
        ["/$defs/node/properties/next/$ref"],
    ]
    infos = [p for p in doc.problems() if p.severity is Severity.INFO]
    assert len(infos) == 2 and all("recursive reference cycle" in p.reason for p in infos)
    assert not [p for p in doc.problems() if p.severity is Severity.ERROR]


def test_recursion_through_the_root_and_anchors():
    doc = load_schema({"$anchor": "top", "anyOf": [{"type": "integer"},
                                                  {"type": "array", "items": {"$ref": "#top"}}]})
    assert doc.ref_cycles() == [["/anyOf/1/items/$ref"]]


def test_cycles_through_registry_documents_use_uris():
    registry = {"https://example.com/list.json": {
        "type": "object", "properties": {"tail": {"$ref": "https://example.com/root.json"}}}}
    doc = load_schema({"$id": "https://example.com/root.json",
                       "anyOf": [{"type": "null"}, {"$ref": "list.json"}]}, registry=registry)
    assert doc.ref_cycles() == [["https://example.com/list.json#/properties/tail/$ref", "/anyOf/1/$ref"]]


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}]}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
     "$ref": "#/$defs/a"},
])
def test_cycles_that_never_descend_are_errors(schema):
    doc = load_schema(schema)
    errors = [p for p in doc.problems(lenient=True) if p.severity is Severity.ERROR]
    assert len(errors) == 1 and "never descends into the instance" in errors[0].reason
    assert errors[0].keyword == "$ref"


def test_cycle_listing_is_bounded():
    names = [f"d{i}" for i in range(7)]
    defs = {n: {"type": "array", "items": {"anyOf": [{"$ref": f"#/$defs/{m}"} for m in names]}}
            for n in names}
    doc = load_schema({"$defs": defs, "$ref": "#/$defs/d0"})
    assert len(doc.ref_cycles()) == MAX_CYCLES
    assert doc.has_ref_cycles


def test_a_prebuilt_registry_is_reusable():
    registry = SchemaRegistry({"urn:example:int": {"type": "integer"}})
    for _ in range(3):
        assert load_schema({"$ref": "urn:example:int"}, registry=registry).lookup(
            "urn:example:int").schema == {"type": "integer"}


def test_the_root_resolver_is_made_only_when_a_ref_or_id_needs_it():
    """None stands for the root's resolver until a `$ref` (or a nested `$id`) needs the real one."""
    plain = load_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    assert "resolver" not in plain._index.__dict__  # a schema without $ref never builds it
    referring = load_schema({"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}})
    assert "resolver" in referring._index.__dict__
    assert referring.lookup("#/$defs/n", None).pointer == "/$defs/n"
    nested = load_schema({"$id": "https://example.com/root.json",
                          "$defs": {"item": {"$id": "item.json", "$defs": {"x": {"type": "integer"}}}}})
    item = nested.schema["$defs"]["item"]
    inside = nested.enter(item, None)  # from the root's scope, given as None
    assert inside is not None and nested.lookup("#/$defs/x", inside).pointer == "/$defs/item/$defs/x"
    assert nested.enter({"type": "integer"}, None) is None  # no $id: the scope is unchanged
