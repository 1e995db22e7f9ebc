"""Loading schemas: sources, garbage and limits, drafts, and the meta-schema check."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings

from formwork.schemas import (InvalidJSONError, MetaSchemaError, SchemaError, SchemaFileError,
                              SchemaTooDeepError, SchemaTooLargeError, UnknownDraftError,
                              load_schema)
from formwork.schemas.drafts import DRAFT_2020_12_SPEC
from formwork.schemas.keywords import DRAFT_KEYWORDS
from formwork.schemas.metaschema import is_valid_schema
from formwork.schemas.pointer import child
from formwork.schemas.walk import subschemas

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import loaded_suite, schema_like, suite_groups, suite_registry  # noqa: E402

PERSON = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


# ---- sources -----------------------------------------------------------------------------------

def test_sources_dict_text_bytes_and_paths_give_the_same_schema(tmp_path):
    path = tmp_path / "person.json"
    path.write_text(json.dumps(PERSON))
    for source in (PERSON, json.dumps(PERSON), json.dumps(PERSON).encode(), path, str(path)):
        assert load_schema(source).schema == PERSON
    assert load_schema(str(path)).label == str(path)


def test_boolean_schemas_and_boolean_text_load():
    assert load_schema(True).schema is True
    assert load_schema("false").schema is False


def test_a_dict_source_is_copied():
    original = copy.deepcopy(PERSON)
    doc = load_schema(original)
    original["properties"]["name"]["type"] = "integer"
    assert doc.schema["properties"]["name"]["type"] == "string"


def test_utf8_bom_is_accepted():
    assert load_schema(b"\xef\xbb\xbf" + json.dumps(PERSON).encode()).schema == PERSON


def test_a_non_source_type_is_a_type_error():
    with pytest.raises(TypeError, match="int"):
        load_schema(42)


# ---- garbage -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ('{"type": "string",}', "line 1 column 19"),
    ('{"minimum": NaN}', "NaN is not valid JSON"),
    ('{"type": "string", "type": "integer"}', "duplicate key 'type'"),
    ("   ", "empty input"),
    ('{"a": [1, 2}', "invalid JSON"),
])
def test_invalid_json_text_is_an_invalid_json_error(text, message):
    with pytest.raises(InvalidJSONError, match=message):
        load_schema(text)


def test_binary_and_non_utf8_bytes_are_invalid_json():
    with pytest.raises(InvalidJSONError, match="binary"):
        load_schema(b"\x7fELF\x02\x01\x00\x00")
    with pytest.raises(InvalidJSONError, match="not UTF-8"):
        load_schema(b'{"title": "\xff\xfe"}')


@pytest.mark.parametrize("schema, pointer, message", [
    ({"properties": {1: {}}}, "/properties", "key 1 is not a string"),
    ({"minimum": float("nan")}, "/minimum", "not a JSON number"),
    ({"enum": [{1, 2}]}, "/enum/0", "set is not a JSON value"),
])
def test_dicts_that_are_not_json_name_the_pointer(schema, pointer, message):
    with pytest.raises(InvalidJSONError, match=message) as info:
        load_schema(schema)
    assert info.value.pointer == pointer


def test_missing_files_and_directories_are_file_errors(tmp_path):
    with pytest.raises(SchemaFileError, match="no such file"):
        load_schema(tmp_path / "absent.json")
    with pytest.raises(SchemaFileError, match="is a directory"):
        load_schema(tmp_path)
    with pytest.raises(SchemaFileError, match="no such file"):
        load_schema("not-json-and-not-a-file")


def test_size_limit_for_text_bytes_and_files(tmp_path):
    big = json.dumps({"enum": ["x" * 100] * 50})
    path = tmp_path / "big.json"
    path.write_text(big)
    for source in (big, big.encode(), path):
        with pytest.raises(SchemaTooLargeError, match="limit"):
            load_schema(source, max_bytes=1000)
    assert load_schema(path, max_bytes=len(big)).schema["enum"][0] == "x" * 100


def nested(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"items": schema}
    return schema


def test_depth_limit_for_dicts_text_and_cyclic_dicts():
    with pytest.raises(SchemaTooDeepError, match="limit of 256") as info:
        load_schema(nested(300))
    assert info.value.pointer.startswith("/items/items")
    assert isinstance(info.value, SchemaTooLargeError)
    with pytest.raises(SchemaTooDeepError):
        load_schema(json.dumps(nested(300)))
    with pytest.raises(SchemaTooDeepError):
        load_schema("[" * 50_000 + "]" * 50_000)
    cyclic: dict = {}
    cyclic["items"] = cyclic
    with pytest.raises(SchemaTooDeepError):
        load_schema(cyclic)


def test_schemas_just_under_the_depth_limit_load_without_recursion_errors():
    doc = load_schema(nested(255))
    assert doc.normalized().as_schema()["items"]["items"]["items"]
    wide: dict = {"type": "string"}
    for _ in range(127):  # two JSON levels per schema level
        wide = {"type": "object", "properties": {"a": wide}}
    assert load_schema(wide, max_depth=256).schema["properties"]["a"]


# ---- drafts ------------------------------------------------------------------------------------

def test_draft_is_chosen_by_dollar_schema_with_2020_12_by_default():
    assert load_schema({}).draft.name == "2020-12"
    assert load_schema({"$schema": "http://json-schema.org/draft-07/schema#"}).draft.name == "draft-07"
    assert load_schema({"$schema": "https://json-schema.org/draft/2020-12/schema"}).draft.name == "2020-12"
    assert load_schema({"items": [{}]}, draft="draft7").draft.name == "draft-07"


@pytest.mark.parametrize("schema, message", [
    ({"$schema": "http://json-schema.org/draft-03/schema#"}, "draft-03 is not supported"),
    ({"$schema": 7}, "must be a URI string"),
])
def test_unknown_drafts_are_unknown_draft_errors_at_dollar_schema(schema, message):
    with pytest.raises(UnknownDraftError, match=message) as info:
        load_schema(schema)
    assert info.value.pointer == "/$schema"


def test_unknown_draft_option_is_an_error():
    with pytest.raises(UnknownDraftError, match="draft-05"):
        load_schema({}, draft="draft-05")


# ---- meta-schema -------------------------------------------------------------------------------

@pytest.mark.parametrize("schema, pointer, keyword, message", [
    ({"type": "strin"}, "/type", "type", "'strin' is not one of"),
    ({"properties": {"a": {"minLength": -1}}}, "/properties/a/minLength", "minLength", "minimum of 0"),
    ({"required": "a"}, "/required", "required", "not of type 'array'"),
    ({"items": [{"type": "string"}]}, "/items", "items", "not of type 'object' or 'boolean'"),
    ({"$defs": {"x": 3}}, "/$defs/x", "$defs", "3 is not of type"),
    ({"properties": {"a/b~c": {"type": 1}}}, "/properties/a~1b~0c/type", "type", "1 is not"),
    ("[1]", "", "", "[1] is not of type 'object' or 'boolean'"),
])
def test_meta_schema_errors_name_pointer_and_keyword(schema, pointer, keyword, message):
    with pytest.raises(MetaSchemaError) as info:
        load_schema(schema)
    first = info.value.problems[0]
    assert (first.pointer, first.keyword) == (pointer, keyword)
    assert message in first.reason
    assert message in str(info.value)


def test_draft_07_tuple_items_pass_its_meta_schema_but_not_2020_12():
    schema = {"items": [{"type": "string"}], "additionalItems": False}
    assert load_schema(schema, draft="draft-07").draft.name == "draft-07"
    with pytest.raises(MetaSchemaError):
        load_schema(schema)


def test_every_meta_schema_problem_is_reported_once():
    with pytest.raises(MetaSchemaError) as info:
        load_schema({"type": "strin", "minItems": -2, "properties": {"a": {"maxLength": "x"}}})
    pointers = [p.pointer for p in info.value.problems]
    assert sorted(pointers) == ["/minItems", "/properties/a/maxLength", "/type"]
    assert "and 2 more" in str(info.value)


# ---- the JSON Schema Test Suite ----------------------------------------------------------------

@pytest.mark.parametrize("draft", ["2020-12", "2019-09", "draft-07", "draft-06", "draft-04"])
def test_every_suite_schema_loads(draft):
    """Custom meta-schemas get an inferred draft and documents of other drafts are translated,
    so every group of every draft loads (cross-draft and vocabulary tests included)."""
    refused = [(name, group["description"], str(doc)) for name, group, doc in loaded_suite(draft)
               if isinstance(doc, Exception)]
    assert refused == []


BOUNDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")


def _bound_sites(schema, draft, pointer=""):
    """(pointer, keyword) of every non-negative-integer bound in the schema's subschemas."""
    if not isinstance(schema, dict):
        return
    for keyword in BOUNDS:
        if keyword in schema:
            yield pointer, keyword
    for sub in subschemas(schema, draft):
        yield from _bound_sites(sub.schema, draft, child(pointer, *sub.tokens))


def _set(schema, pointer, keyword, value):
    node = schema
    for token in [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    node[keyword] = value


@pytest.mark.parametrize("draft", ["2020-12", "draft-07"])
def test_suite_schemas_with_a_negative_bound_fail_the_meta_schema_at_that_pointer(draft):
    checked = 0
    for _name, group in suite_groups(draft):
        for pointer, keyword in _bound_sites(group["schema"], draft):
            broken = copy.deepcopy(group["schema"])
            _set(broken, pointer, keyword, -1)
            with pytest.raises(MetaSchemaError) as info:
                load_schema(broken, registry=suite_registry(draft), draft=draft)
            assert [(p.pointer, p.keyword) for p in info.value.problems] == [
                (child(pointer, keyword), keyword)]
            checked += 1
    assert checked >= 20


def test_schema_errors_share_a_base_class():
    for cls in (InvalidJSONError, MetaSchemaError, SchemaFileError, SchemaTooLargeError,
                UnknownDraftError):
        assert issubclass(cls, SchemaError)


# ---- the fast 2020-12 meta-schema agrees with the official one ---------------------------------

def _official_is_valid(schema):
    validator = jsonschema.Draft202012Validator
    formats = [f for f in validator.FORMAT_CHECKER.checkers if f != "regex"]
    return validator(validator.META_SCHEMA,
                     format_checker=jsonschema.FormatChecker(formats)).is_valid(schema)


def test_fast_meta_schema_agrees_on_every_suite_schema_and_subschema():
    checked = 0
    for _name, group in suite_groups("2020-12"):
        stack = [group["schema"]]
        while stack:
            schema = stack.pop()
            assert is_valid_schema(schema, DRAFT_2020_12_SPEC) == _official_is_valid(schema)
            stack.extend(sub.schema for sub in subschemas(schema, "2020-12"))
            checked += 1
    assert checked > 1000


schema_like_values = schema_like(
    ["", "a", "string", "object", "#", "#/$defs/x", "uuid", "^a+$", "(", "http://x/"],
    sorted(DRAFT_KEYWORDS["2020-12"]) + ["x-unknown", "items"])


@settings(deadline=None, max_examples=150)
@given(schema_like_values)
def test_fast_meta_schema_agrees_on_random_schema_like_values(schema):
    assert is_valid_schema(schema, DRAFT_2020_12_SPEC) == _official_is_valid(schema)


def test_check_depth_counts_containers_and_names_the_first_one_too_deep():
    from formwork.schemas.source import check_depth

    assert check_depth("x") == 0 and check_depth({}) == 1
    assert check_depth({"a": [1, {"b": []}], "c": {}}) == 4
    with pytest.raises(SchemaTooDeepError) as info:
        check_depth({"a": [[[]]], "b": {"c": {"d": {}}}}, max_depth=3)
    assert info.value.pointer == "/b/c/d"  # the last member is walked first
    with pytest.raises(SchemaTooDeepError) as info:
        load_schema(json.dumps(nested(300)))
    assert info.value.pointer.startswith("/items/items")


def test_the_depth_found_while_copying_is_check_depths():
    from formwork.schemas.source import check_depth, load_source_with_depth

    values = [{}, True, {"a": [1, {"b": [[]]}]}, {"a": ({"b": 1},)}, {"a": [[[]], []]}]
    bench = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"
    values += [json.loads(p.read_text())["schema"] for p in sorted(bench.glob("*.json"))]
    for value in values:
        copy, _, depth = load_source_with_depth(value)
        assert depth == check_depth(copy)
        assert load_source_with_depth(json.dumps(value))[2] == depth
