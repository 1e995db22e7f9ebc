"""Draft-04, draft-06 and 2019-09 schemas (translated into draft-07 / 2020-12), and a draft
inferred for a `$schema` formwork does not know."""
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.errors import GrammarError
from formwork.grammar.json_schema import compile_json_schema
from formwork.schemas import load_schema
from formwork.schemas.dialects import infer_draft
from formwork.schemas.errors import UnknownDraftError

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT6 = "http://json-schema.org/draft-06/schema#"
DRAFT2019 = "https://json-schema.org/draft/2019-09/schema"
IGLU = "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#"


def accepts(grammar, value) -> bool:
    m = grammar.matcher()
    return m.accept_string(json.dumps(value, separators=(",", ":"))) and m.can_terminate()


def test_draft4_id_and_boolean_exclusive_bounds_are_translated():
    doc = load_schema({"$schema": DRAFT4, "id": "http://example.com/root.json", "type": "object",
                       "properties": {"id": {"type": "integer", "minimum": 0, "exclusiveMinimum": True,
                                             "maximum": 9, "exclusiveMaximum": False}}})
    assert doc.declared.name == "draft-04" and doc.draft.name == "draft-07"
    assert doc.schema["$id"] == "http://example.com/root.json" and "id" not in doc.schema
    assert doc.schema["properties"]["id"] == {"type": "integer", "exclusiveMinimum": 0, "maximum": 9}
    assert doc.unsupported() == []


def test_draft4_keywords_of_later_drafts_are_dropped_with_a_warning():
    doc = load_schema({"$schema": DRAFT4, "properties": {"a": {"const": 3, "type": "integer"}}})
    assert doc.schema["properties"]["a"] == {"type": "integer"}
    [problem] = doc.unsupported()
    assert (problem.pointer, problem.keyword, problem.severity.value) == \
        ("/properties/a/const", "const", "warning")
    assert problem.reason == "'const' is not a draft-04 keyword; JSON Schema ignores it " \
                             "(the schema declares draft-04)"
    grammar = compile_json_schema({"$schema": DRAFT4, "properties": {"a": {"const": 3}}}, byte_vocab())
    assert accepts(grammar, {"a": 4})  # draft-04 ignores const, as jsonschema's Draft4Validator does
    assert jsonschema.Draft4Validator({"properties": {"a": {"const": 3}}}).is_valid({"a": 4})


def test_draft4_ref_resolves_against_id():
    schema = {"$schema": DRAFT4, "id": "http://example.com/root.json",
              "definitions": {"n": {"id": "#positive", "type": "integer", "minimum": 1}},
              "properties": {"n": {"$ref": "#positive"}}}
    grammar = compile_json_schema(schema, byte_vocab())
    assert accepts(grammar, {"n": 2}) and not accepts(grammar, {"n": 0})


def test_draft6_drops_if_then_else():
    schema = {"$schema": DRAFT6, "if": {"type": "string"}, "then": {"maxLength": 1}}
    doc = load_schema(schema)
    assert "if" not in doc.schema and "then" not in doc.schema
    assert {p.keyword for p in doc.unsupported()} == {"if", "then"}
    assert accepts(compile_json_schema(schema, byte_vocab()), "long")


def test_2019_09_tuple_items_become_prefix_items():
    schema = {"$schema": DRAFT2019, "items": [{"type": "integer"}], "additionalItems": False}
    doc = load_schema(schema)
    assert doc.draft.name == "2020-12"
    assert doc.schema == {"$schema": "https://json-schema.org/draft/2020-12/schema",
                          "prefixItems": [{"type": "integer"}], "items": False}
    grammar = compile_json_schema(schema, byte_vocab())
    assert accepts(grammar, [1]) and not accepts(grammar, [1, 2]) and not accepts(grammar, ["a"])


def test_2019_09_additional_items_beside_one_items_schema_has_no_effect():
    doc = load_schema({"$schema": DRAFT2019, "items": {"type": "integer"}, "additionalItems": False})
    assert doc.schema == {"$schema": "https://json-schema.org/draft/2020-12/schema",
                          "items": {"type": "integer"}}


def test_2019_09_recursive_ref_without_dynamic_target_is_a_ref():
    schema = {"$schema": DRAFT2019, "$recursiveAnchor": True, "type": "object",
              "properties": {"child": {"$recursiveRef": "#"}, "n": {"type": "integer"}},
              "additionalProperties": False}
    grammar = compile_json_schema(schema, byte_vocab())
    assert accepts(grammar, {"child": {"child": {"n": 1}}})
    assert not accepts(grammar, {"child": {"child": {"n": "x"}}})


def test_2019_09_recursive_ref_whose_target_depends_on_the_dynamic_scope_is_refused():
    schema = {"$schema": DRAFT2019, "$id": "https://example.com/root",
              "properties": {"tree": {"$ref": "tree"}},
              "$defs": {"tree": {"$id": "tree", "$recursiveAnchor": True,
                                 "properties": {"kids": {"items": {"$recursiveRef": "#"}}}}}}
    with pytest.raises(GrammarError, match=r"\$recursiveRef"):
        compile_json_schema(schema, byte_vocab())


def test_unknown_schema_uri_is_inferred_with_a_warning():
    schema = {"$schema": IGLU, "self": {"vendor": "com.acme", "name": "e", "format": "jsonschema",
                                       "version": "1-0-0"},
              "type": "object", "properties": {"n": {"type": "integer", "maximum": 3,
                                                     "exclusiveMaximum": True}}}
    doc = load_schema(schema)
    assert doc.declared.name == "draft-04"
    problem, unknown = doc.unsupported()
    assert (unknown.pointer, unknown.severity.value) == ("/self", "warning")  # not a keyword
    assert problem.pointer == "/$schema" and problem.severity.value == "warning"
    assert problem.reason == (f"$schema {IGLU!r} is not a meta-schema formwork knows (none is "
                              "fetched); compiled as draft-04, the closest draft its keywords imply")
    grammar = compile_json_schema(schema, byte_vocab())
    assert any("compiled as draft-04" in w for w in grammar.warnings)
    assert accepts(grammar, {"n": 2}) and not accepts(grammar, {"n": 3})


@pytest.mark.parametrize("schema, draft", [
    ({"type": "string"}, "2020-12"),
    ({"id": "x", "type": "string"}, "draft-04"),
    ({"minimum": 1, "exclusiveMinimum": True}, "draft-04"),
    ({"exclusiveMinimum": 1, "const": 2}, "2020-12"),
    ({"items": [{"type": "string"}]}, "2019-09"),
    ({"dependencies": {"a": ["b"]}, "const": 1}, "draft-07"),
    ({"if": {"type": "string"}, "dependencies": {"a": ["b"]}}, "draft-07"),
    ({"$recursiveRef": "#"}, "2019-09"),
    ({"prefixItems": [{}], "$defs": {}}, "2020-12"),
    ({"properties": {"id": {"type": "string"}}}, "2020-12"),  # a property named id is no keyword
    ({"id": "x", "exclusiveMinimum": True, "minimum": 0, "prefixItems": []}, "draft-04"),
    ({"allOf": [{"$ref": "http://json-schema.org/draft-04/schema#"}]}, "draft-04"),  # its meta-schema
    ({"$ref": "#/definitions/a", "definitions": {"a": {}}}, "2020-12"),
    ({"id": "x", "required": []}, "2020-12"),  # nx's schemas: an empty `required` is no draft-04 schema
    ({"id": "x", "required": ["a"]}, "draft-04"),
])
def test_inferred_draft(schema, draft):
    assert infer_draft(schema).name == draft


def test_pre_draft4_is_refused():
    with pytest.raises(UnknownDraftError, match="draft-03 is not supported"):
        load_schema({"$schema": "http://json-schema.org/draft-03/schema#"})


def test_an_older_draft_nested_in_a_2020_12_schema_is_refused():
    with pytest.raises(UnknownDraftError, match="a subschema declaring draft-04 inside a 2020-12"):
        load_schema({"properties": {"a": {"$schema": DRAFT4, "type": "string"}}})


def test_a_draft4_document_is_checked_against_the_draft4_meta_schema():
    with pytest.raises(Exception, match="required"):
        load_schema({"$schema": DRAFT4, "required": []})  # draft-04 wants at least one name
    load_schema({"$schema": DRAFT6, "required": []})


def test_draft_option_names_older_drafts():
    doc = load_schema({"minimum": 1, "exclusiveMinimum": True}, draft="draft-04")
    assert doc.schema == {"exclusiveMinimum": 1}


def test_registry_documents_are_translated_by_their_own_draft():
    remote = {"$schema": DRAFT4, "type": "integer", "maximum": 5, "exclusiveMaximum": True}
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "http://example.com/five.json"}
    grammar = compile_json_schema(schema, byte_vocab(), registry={"http://example.com/five.json": remote})
    assert accepts(grammar, 4) and not accepts(grammar, 5)


def test_a_ref_into_a_document_of_the_other_draft_family_is_refused():
    remote = {"$schema": DRAFT4, "items": [{"type": "integer"}]}
    with pytest.raises(GrammarError, match="the target is a draft-07 document using 'items' inside a 2020-12 schema"):
        compile_json_schema({"$ref": "http://example.com/tuple.json"}, byte_vocab(),
                            registry={"http://example.com/tuple.json": remote})


def test_ref_into_the_draft4_meta_schema_resolves():
    grammar = compile_json_schema({"$schema": DRAFT4, "$ref": DRAFT4 + "/definitions/positiveInteger"},
                                  byte_vocab())
    assert accepts(grammar, 3) and not accepts(grammar, -1)


bounds = st.one_of(st.none(), st.integers(-5, 5))


@settings(max_examples=60, deadline=None)
@given(minimum=bounds, maximum=bounds, exclusive_min=st.booleans(), exclusive_max=st.booleans(),
       values=st.lists(st.integers(-8, 8), min_size=1, max_size=6))
def test_draft4_numeric_bounds_match_jsonschema(minimum, maximum, exclusive_min, exclusive_max, values):
    schema = {"$schema": DRAFT4, "type": "integer"}
    if minimum is not None:  # draft-04's meta-schema wants the bound beside its flag
        schema.update(minimum=minimum, exclusiveMinimum=exclusive_min)
    if maximum is not None:
        schema.update(maximum=maximum, exclusiveMaximum=exclusive_max)
    validator = jsonschema.Draft4Validator(schema)
    try:
        grammar = compile_json_schema(schema, byte_vocab())
    except GrammarError:
        assert not any(validator.is_valid(v) for v in range(-10, 11))  # an empty language
        return
    for value in values:
        assert accepts(grammar, value) == validator.is_valid(value), (schema, value)


def test_2019_09_pointer_refs_follow_the_renamed_keywords():
    schema = {"$schema": DRAFT2019, "items": [{"type": "integer"}, {"$ref": "#/items/0"}],
              "additionalItems": {"$ref": "#/additionalItems/$defs/s"}}
    schema["additionalItems"] = {"$defs": {"s": {"type": "string"}}, "$ref": "#/additionalItems/$defs/s"}
    doc = load_schema(schema)
    assert doc.schema["prefixItems"][1] == {"$ref": "#/prefixItems/0"}
    assert doc.schema["items"]["$ref"] == "#/items/$defs/s"
    grammar = compile_json_schema(schema, byte_vocab())
    assert accepts(grammar, [1, 2, "x"]) and not accepts(grammar, [1, "2"]) and not accepts(grammar, [1, 2, 3])


# ---- 2020-12 $dynamicRef where its target is static ---------------------------------------------

TREE = {"$id": "https://example.com/tree", "$dynamicAnchor": "node", "type": "object",
        "properties": {"data": True, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}


def test_dynamic_ref_to_the_roots_dynamic_anchor_extends_a_recursive_schema():
    strict = {"$id": "https://example.com/strict-tree", "$dynamicAnchor": "node",
              "$ref": "tree", "properties": {"data": {"type": "integer"}}}
    grammar = compile_json_schema(strict, byte_vocab(), registry={"https://example.com/tree": TREE})
    assert accepts(grammar, {"data": 1, "children": [{"data": 2, "children": []}]})
    # the children are strict trees too: the root's anchor wins over tree's own
    assert not accepts(grammar, {"data": 1, "children": [{"data": "x"}]})
    validator = jsonschema.Draft202012Validator(
        strict, registry=__import__("referencing").Registry().with_resource(
            "https://example.com/tree", __import__("referencing").jsonschema.DRAFT202012.create_resource(TREE)))
    assert not validator.is_valid({"data": 1, "children": [{"data": "x"}]})


def test_dynamic_ref_with_one_dynamic_anchor_is_a_ref():
    grammar = compile_json_schema({"$ref": "https://example.com/tree"}, byte_vocab(),
                                  registry={"https://example.com/tree": TREE})
    assert accepts(grammar, {"children": [{"data": "x", "children": []}]})
    assert not accepts(grammar, {"children": [3]})


def test_dynamic_ref_to_a_plain_anchor_or_pointer_is_a_ref():
    schema = {"$defs": {"s": {"$anchor": "s", "type": "string"}},
              "properties": {"a": {"$dynamicRef": "#s"}, "b": {"$dynamicRef": "#/$defs/s"}}}
    grammar = compile_json_schema(schema, byte_vocab())
    assert accepts(grammar, {"a": "x", "b": "y"}) and not accepts(grammar, {"a": 1})
    assert not accepts(grammar, {"b": 1})


def test_dynamic_ref_whose_target_depends_on_the_path_is_refused():
    other = {"$id": "https://example.com/other", "$dynamicAnchor": "node", "type": "string"}
    schema = {"properties": {"t": {"$ref": "https://example.com/tree"},
                             "o": {"$ref": "https://example.com/other"}}}
    with pytest.raises(GrammarError, match="several resources define \\$dynamicAnchor 'node'"):
        compile_json_schema(schema, byte_vocab(), registry={"https://example.com/tree": TREE,
                                                            "https://example.com/other": other})
