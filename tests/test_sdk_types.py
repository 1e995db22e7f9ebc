"""Python types <-> JSON Schema (`formwork.schemas.python_types` / `python_values`) and output formats."""
from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import sys
import typing
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import jsonschema
import pydantic
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_sdk import to_json  # noqa: E402

from formwork.grammar.json_schema import lower_json_schema
from formwork.schemas.python_types import UnsupportedTypeError, json_schema_of
from formwork.schemas.python_values import ValueMismatchError, from_json
from formwork.sdk_errors import (GenerationError, OutputValidationError, TruncatedOutputError,
                                 UnsupportedOutputTypeError)
from formwork.sdk_output import Choice, JsonSchema, Regex, field_path, output_format


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Item:
    sku: str
    qty: int = 1


@dataclasses.dataclass
class Order:
    id: int
    items: list[Item]
    color: Color
    note: Optional[str] = None
    kind: Literal["retail", "wholesale"] = "retail"


class Point(TypedDict):
    x: float
    y: float
    label: NotRequired[str]


class Address(pydantic.BaseModel):
    city: str
    zip: Optional[str] = None


@dataclasses.dataclass
class Customer:
    name: str
    address: Address
    level: Level
    tags: dict[str, int]
    pair: tuple[int, str]
    seen: Annotated[bool, "a note"]


@dataclasses.dataclass
class Tree:
    value: int
    children: list[Tree]


# ---- schema shapes -------------------------------------------------------------------------------

@pytest.mark.parametrize("tp, schema", [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, {"type": "null"}),
    (Any, {}),
    (datetime.date, {"type": "string", "format": "date"}),
    (uuid.UUID, {"type": "string", "format": "uuid"}),
    (Literal["a"], {"const": "a"}),
    (Literal["a", 1, True, None], {"enum": ["a", 1, True, None]}),
    (Literal[Color.RED], {"const": "red"}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (typing.Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (tuple[int, str], {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False,
                       "minItems": 2, "maxItems": 2}),
    (dict[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
    (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (int | str | None, {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}),
    (Color, {"title": "Color", "enum": ["red", "green"]}),
    (Annotated[int, "meta"], {"type": "integer"}),
])
def test_schema_of_plain_types(tp, schema):
    assert json_schema_of(tp) == schema


def test_dataclass_schema_is_closed_with_defs_in_field_order():
    schema = json_schema_of(Order)
    assert list(schema["properties"]) == ["id", "items", "color", "note", "kind"]
    assert schema["required"] == ["id", "items", "color"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/Item"}}
    assert schema["$defs"]["Item"]["required"] == ["sku"]
    assert schema["$defs"]["Color"] == {"title": "Color", "enum": ["red", "green"]}
    jsonschema.Draft202012Validator.check_schema(schema)


def test_typeddict_required_keys_survive_postponed_annotations():
    schema = json_schema_of(Point)
    assert schema["required"] == ["x", "y"]
    assert set(schema["properties"]) == {"x", "y", "label"}


def test_pydantic_root_is_pydantics_own_schema_and_nested_models_merge_defs():
    assert json_schema_of(Address) == {**Address.model_json_schema(), "additionalProperties": False}
    schema = json_schema_of(Customer)
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert schema["$defs"]["Address"]["properties"]["city"]["type"] == "string"
    assert schema["$defs"]["Level"]["enum"] == [1, 2]
    jsonschema.Draft202012Validator.check_schema(schema)


def test_pydantic_models_are_closed_unless_they_allow_extra_keys():
    class Open(pydantic.BaseModel, extra="allow"):
        a: int

    class Strict(pydantic.BaseModel, extra="forbid"):
        b: int

    class Outer(pydantic.BaseModel):
        open: Open
        strict: Strict

    schema = json_schema_of(Outer)
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Open"]["additionalProperties"] is True
    assert schema["$defs"]["Strict"]["additionalProperties"] is False
    assert from_json(Outer, {"open": {"a": 1, "x": 2}, "strict": {"b": 3}}).open.x == 2


def test_recursive_dataclass_refers_to_the_root():
    schema = json_schema_of(Tree)
    assert schema["properties"]["children"] == {"type": "array", "items": {"$ref": "#"}}
    assert jsonschema.Draft202012Validator(schema).is_valid({"value": 1, "children": [{"value": 2, "children": []}]})


def test_same_name_types_get_distinct_defs():
    def make():
        @dataclasses.dataclass
        class Item:  # noqa: F811 - a different class with the same name
            label: str
        return Item

    Both = dataclasses.make_dataclass("Both", [("a", Item), ("b", make())])
    schema = json_schema_of(Both)
    refs = {schema["properties"]["a"]["$ref"], schema["properties"]["b"]["$ref"]}
    assert refs == {"#/$defs/Item", "#/$defs/Item2"}
    assert set(schema["$defs"]["Item2"]["properties"]) == {"label"}


@pytest.mark.parametrize("tp, field", [
    (set[int], ""),
    (frozenset[str], ""),
    (dict[int, str], ""),
    (bytes, ""),
    (Literal[b"x"], ""),
    (list[complex], "[]"),
    (dict[str, set[int]], "[*]"),
])
def test_unsupported_types_name_the_field(tp, field):
    with pytest.raises(UnsupportedTypeError) as info:
        json_schema_of(tp)
    assert info.value.path == field


def test_unsupported_dataclass_field_is_named():
    @dataclasses.dataclass
    class Bad:
        ok: int
        tags: set[str]

    with pytest.raises(UnsupportedTypeError, match="uniqueItems") as info:
        json_schema_of(Bad)
    assert info.value.path == "tags"


def test_unresolvable_forward_reference_is_reported():
    @dataclasses.dataclass
    class Dangling:
        x: "NoSuchType"  # noqa: F821

    with pytest.raises(UnsupportedTypeError, match="cannot resolve"):
        json_schema_of(Dangling)


# ---- values back ---------------------------------------------------------------------------------

def test_from_json_builds_nested_objects():
    value = {"name": "Ann", "address": {"city": "Oslo"}, "level": 2, "tags": {"a": 1},
             "pair": [3, "x"], "seen": True}
    customer = from_json(Customer, value)
    assert customer == Customer("Ann", Address(city="Oslo"), Level.HIGH, {"a": 1}, (3, "x"), True)
    assert isinstance(customer.address, Address) and customer.level is Level.HIGH
    order = from_json(Order, {"id": 1.0, "items": [{"sku": "s"}], "color": "green"})
    assert order == Order(1, [Item("s")], Color.GREEN) and isinstance(order.id, int)


@pytest.mark.parametrize("tp, value, result", [
    (float, 2, 2.0),
    (int | float, 2, 2),
    (float | int, 2, 2.0),
    (Literal[1, "a"], 1.0, 1),
    (datetime.datetime, "2024-05-06T07:08:09+00:00",
     datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc)),
    (datetime.time, "10:11:12", datetime.time(10, 11, 12)),
    (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    (Optional[Point], {"x": 1, "y": 2}, {"x": 1, "y": 2}),
    (Any, {"a": [1]}, {"a": [1]}),
])
def test_from_json_scalars(tp, value, result):
    got = from_json(tp, value)
    assert got == result and type(got) is type(result)


@pytest.mark.parametrize("tp, value, path", [
    (int, True, ""),
    (int, 1.5, ""),
    (bool, 1, ""),
    (str, None, ""),
    (Color, "blue", ""),
    (Literal["a"], "b", ""),
    (Order, {"id": 1, "items": [{"sku": 5}], "color": "red"}, "items[0].sku"),
    (Order, {"id": 1, "items": [], "color": "red", "extra": 1}, ""),
    (Order, {"items": [], "color": "red"}, ""),
    (Point, {"x": 1}, ""),
    (tuple[int, str], [1], ""),
    (dict[str, int], {"a": "b"}, "['a']"),
    (datetime.date, "yesterday", ""),
    (Customer, {"name": "A", "address": {}, "level": 1, "tags": {}, "pair": [1, "a"], "seen": True}, "address"),
])
def test_from_json_rejects_with_the_path(tp, value, path):
    with pytest.raises(ValueMismatchError) as info:
        from_json(tp, value)
    assert info.value.path == path


# Types whose JSON Schema and `from_json` must agree on every JSON value (no formats: jsonschema
# does not assert them by default).
AGREEING_TYPES = [int, float, bool, str, None, Literal["a", 1, False], Color, Level, list[int], tuple[int, str],
                  dict[str, bool], Optional[list[str]], int | str, Item, Order, Point, list[Item]]

JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from([1.0, 2.5, -0.5]),
                         st.sampled_from(["a", "red", "green", "s", "retail", "x", "y", "sku", "id"]))
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["sku", "qty", "id", "items", "color", "x", "y", "label", "note"]), inner,
                    max_size=4)), max_leaves=8)


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(tp=st.sampled_from(AGREEING_TYPES), value=JSON_VALUES)
def test_schema_and_from_json_agree_on_random_json(tp, value):
    valid = jsonschema.Draft202012Validator(json_schema_of(tp)).is_valid(value)
    try:
        from_json(tp, value)
        converted = True
    except ValueMismatchError:
        converted = False
    assert valid == converted


def json_document(value: Any) -> Any:
    """`value` as JSON text and back; non-finite floats are not JSON, so such examples are dropped."""
    try:
        return json.loads(json.dumps(to_json(value), allow_nan=False))
    except ValueError:
        reject()


ROUND_TRIP_TYPES = [Order, list[Item], Point, dict[str, Optional[Color]], tuple[int, Literal["x", "y"]], Level]


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tp=st.sampled_from(ROUND_TRIP_TYPES))
def test_values_round_trip_through_json(data, tp):
    value = data.draw(st.from_type(tp))
    document = json_document(value)
    jsonschema.validate(document, json_schema_of(tp))
    assert from_json(tp, document) == value


# ---- output formats --------------------------------------------------------------------------------

@pytest.mark.parametrize("tp", [Order, Point, Customer, Address, list[Item], Color, Literal["a", "b"], int, float,
                                bool, str, Optional[int], dict[str, int]])
def test_every_supported_kind_lowers_to_a_grammar(tp):
    fmt = output_format(tp)
    assert fmt.structured_outputs == {"json": json_schema_of(tp)}
    assert fmt.response_format()["json_schema"]["schema"] == json_schema_of(tp)
    lower_json_schema(fmt.schema)


def test_output_format_parses_and_revalidates():
    fmt = output_format(Order)
    text = '{"id": 7, "items": [{"sku": "a", "qty": 2}], "color": "red", "kind": "wholesale"}'
    assert fmt.result(text, "stop") == Order(7, [Item("a", 2)], Color.RED, kind="wholesale")
    with pytest.raises(OutputValidationError, match="not JSON"):
        fmt.parse('{"id": 7,')
    with pytest.raises(OutputValidationError) as info:
        fmt.parse('{"id": 7, "items": [{"sku": 1}], "color": "red"}')
    assert info.value.path == "items/0/sku"
    assert output_format(Address).parse('{"city": "Rome"}') == Address(city="Rome")


def test_truncation_raises_with_the_partial_text():
    with pytest.raises(TruncatedOutputError) as info:
        output_format(Order).result('{"id": 7, "ite', "length", max_tokens=5)
    assert info.value.partial_text == '{"id": 7, "ite' and info.value.max_tokens == 5
    with pytest.raises(GenerationError, match="'abort'"):
        output_format(Order).result('{"id"', "abort")


def test_json_schema_marker_keeps_property_order():
    schema = {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}}}
    marker = JsonSchema(schema, name="z")
    assert list(output_format(marker).structured_outputs["json"]["properties"]) == ["zeta", "alpha"]
    assert marker == JsonSchema(json.dumps(schema), name="z")
    with pytest.raises(UnsupportedOutputTypeError, match="not valid JSON"):
        JsonSchema("{oops")
    with pytest.raises(UnsupportedOutputTypeError, match="object or a boolean"):
        JsonSchema([1])


def test_unenforceable_types_fail_naming_the_field():
    class Tagged(pydantic.BaseModel):
        tags: list[str] = pydantic.Field(json_schema_extra={"uniqueItems": True})
        price: float = pydantic.Field(multiple_of=0.5)

    with pytest.raises(UnsupportedOutputTypeError, match="'tags'") as info:
        output_format(Tagged)
    assert info.value.field == "tags" and info.value.keyword == "uniqueItems"

    Holder = dataclasses.make_dataclass("Holder", [("inner", Tagged)])
    with pytest.raises(UnsupportedOutputTypeError) as info:
        output_format(Holder)
    assert info.value.field == "Tagged.tags"
    with pytest.raises(UnsupportedOutputTypeError, match="uniqueItems") as info:
        output_format(set[int])


def test_regex_choice_and_json_schema_markers():
    fmt = output_format(Regex(r"\d{3}-[a-z]+"))
    assert fmt.structured_outputs == {"regex": r"\d{3}-[a-z]+"} and fmt.response_format() is None
    assert fmt.result("123-abc", "stop") == "123-abc"
    with pytest.raises(OutputValidationError):
        fmt.parse("12-abc")
    with pytest.raises(UnsupportedOutputTypeError, match="lookaround"):
        output_format(Regex(r"(?=a)a"))
    with pytest.raises(UnsupportedOutputTypeError):
        output_format(Regex("[a"))
    choice = output_format(Choice(["yes", "no"]))
    assert choice.structured_outputs == {"choice": ["yes", "no"]} and choice.parse("no") == "no"
    with pytest.raises(OutputValidationError):
        choice.parse("maybe")
    with pytest.raises(TypeError):
        Choice("yes")
    schema = output_format(JsonSchema({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}))
    assert schema.parse('{"n": 3}') == {"n": 3}
    with pytest.raises(OutputValidationError):
        schema.parse('{"n": "3"}')
    with pytest.raises(UnsupportedOutputTypeError, match="'xs'"):
        output_format(JsonSchema({"properties": {"xs": {"type": "array", "uniqueItems": True}}}))


def test_output_formats_are_cached():
    assert output_format(Order) is output_format(Order)
    assert output_format(Regex("a+")) is output_format(Regex("a+"))


@pytest.mark.parametrize("pointer, path", [
    ("", ""),
    ("/properties/a/minLength", "a"),
    ("/properties/items/items/properties/sku/pattern", "items[].sku"),
    ("/$defs/Item/properties/tags/uniqueItems", "Item.tags"),
    ("/prefixItems/1/anyOf/0/properties/x", "[1].x"),
    ("/additionalProperties/properties/k/not", "[*].k"),
])
def test_field_path(pointer, path):
    assert field_path(pointer) == path
