"""Python types -> JSON Schema by pydantic (`formwork.schemas.python_types`) and output formats
(`formwork.sdk.output_types`): schemas, refusals naming the field, values built by pydantic."""
from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import sys
import typing
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, Optional

import pydantic
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from pydantic import Field, StringConstraints, TypeAdapter, conint, constr
from typing_extensions import NotRequired, TypedDict

sys.path.insert(0, str(Path(__file__).parent))
from conftest_sdk import to_json  # noqa: E402

from formwork.grammar.json_schema import lower_json_schema
from formwork.schemas.python_types import FORMAT_PATTERNS, UnsupportedTypeError, field_path, json_schema_of
from formwork.sdk.errors import (GenerationError, OutputValidationError, TruncatedOutputError,
                                 UnsupportedOutputTypeError)
from formwork.sdk.output_types import Choice, JsonSchema, Regex, loc_path, output_format


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Item:
    sku: str
    qty: Annotated[int, Field(ge=1, le=9)] = 1


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


class Pair(NamedTuple):
    left: int
    right: str


class Address(pydantic.BaseModel):
    city: constr(min_length=1, max_length=20)
    zip: Optional[Annotated[str, StringConstraints(pattern=r"^\d{5}$")]] = None


@dataclasses.dataclass
class Customer:
    name: str
    address: Address
    level: Level
    tags: dict[str, int]
    pair: Pair
    seen: Annotated[bool, "a note"]


@dataclasses.dataclass
class Tree:
    value: int
    children: list[Tree]


# ---- schemas are pydantic's ----------------------------------------------------------------------

PLAIN_TYPES = [str, int, float, bool, None, Any, uuid.UUID, Literal["a", 1, True, None], Color, Level, list[int], tuple[int, str], tuple[int, ...],
               Pair, dict[str, float], Optional[int], int | str | None, conint(ge=0, le=99, multiple_of=3),
               constr(min_length=2, max_length=5, pattern=r"^[a-z]+$"), Annotated[list[str], Field(max_length=2)],
               Annotated[str, StringConstraints(min_length=1, to_lower=True)]]


@pytest.mark.parametrize("tp", PLAIN_TYPES, ids=repr)
def test_schema_is_pydantics_own(tp):
    assert json_schema_of(tp) == TypeAdapter(tp).json_schema()
    lower_json_schema(json_schema_of(tp))


def test_annotated_constraints_reach_the_schema():
    """The issue's case: `Annotated` metadata is no longer thrown away."""
    assert json_schema_of(list[Annotated[int, Field(ge=0, le=99)]]) == {
        "type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}}
    schema = json_schema_of(Address)
    assert schema["properties"]["city"] == {"type": "string", "minLength": 1, "maxLength": 20, "title": "City"}
    assert schema["properties"]["zip"]["anyOf"][0] == {"type": "string", "pattern": r"^\d{5}$"}


def test_objects_are_closed_unless_they_allow_extra_keys():
    class Open(pydantic.BaseModel, extra="allow"):
        a: int

    class Outer(pydantic.BaseModel):
        open: Open
        point: Point
        item: Item

    schema = json_schema_of(Outer)
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Open"]["additionalProperties"] is True
    assert schema["$defs"]["Point"]["additionalProperties"] is False
    assert schema["$defs"]["Item"]["additionalProperties"] is False
    assert schema["$defs"]["Point"]["required"] == ["x", "y"]
    assert output_format(Outer).parse('{"open": {"a": 1, "x": 2}, "point": {"x": 1, "y": 2}, "item": {"sku": "s"}}'
                                      ).open.x == 2


def test_recursive_and_nested_types_use_defs():
    schema = json_schema_of(Tree)
    assert schema["$ref"] == "#/$defs/Tree"
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    schema = json_schema_of(Customer)
    assert schema["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert schema["$defs"]["Level"]["enum"] == [1, 2]


def test_generation_schema_tightens_what_pydantic_leaves_loose():
    # Decimal: decimal digits in a string, read exactly (pydantic's schema allows any string); with bounds,
    # a bounded number (no exponent: 1e400 would be an infinite float to pydantic).
    assert json_schema_of(decimal.Decimal) == {"type": "string", "pattern": r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$"}
    assert json_schema_of(pydantic.condecimal(ge=1, le=10)) == {"type": "number", "minimum": 1.0, "maximum": 10.0}
    # Exclusive float bounds: the nearest float inside (a decimal just inside 1 rounds onto 1.0).
    assert json_schema_of(Annotated[float, Field(gt=0.5, lt=1)]) == {
        "type": "number", "minimum": 0.5000000000000001, "maximum": 0.9999999999999999}
    assert json_schema_of(Annotated[float, Field(gt=0)]) == {"type": "number", "exclusiveMinimum": 0}
    assert json_schema_of(Annotated[int, Field(gt=0)]) == {"type": "integer", "exclusiveMinimum": 0}
    # Dates, times and durations: RFC 3339 allows year 0000, second 60 and numbers too large for a timedelta.
    assert json_schema_of(datetime.date) == {"type": "string", "format": "date", "pattern": FORMAT_PATTERNS["date"]}
    for tp, fmt in [(datetime.datetime, "date-time"), (datetime.time, "time"), (datetime.timedelta, "duration")]:
        assert json_schema_of(tp) == {**TypeAdapter(tp).json_schema(), "pattern": FORMAT_PATTERNS[fmt]}
    # dict keys with a pattern: keys that do not match are not generated.
    assert json_schema_of(dict[Annotated[str, Field(pattern="^a")], int]) == {
        "type": "object", "patternProperties": {"^a": {"type": "integer"}}, "additionalProperties": False}


@pytest.mark.parametrize("tp, field, match", [
    (dict[int, str], "", "keys are strings"),
    (dict[str, dict[int, str]], "[*]", "keys are strings"),
    (dict[Literal[1, 2], str], "", "keys are strings"),
    (complex, "", "complex"),
    (list[complex], "[]", "complex"),
    (pydantic.condecimal(max_digits=5, decimal_places=2), "", "max_digits"),
    (Annotated[datetime.date, Field(gt=datetime.date(2020, 1, 1))], "", "date checks \\(gt\\)"),
    (pydantic.Json[int], "", "Json"),
    (pydantic.PastDate, "", "now_op"),
    (dict[str, pydantic.NaiveDatetime], "[*]", "naive"),
    (list[pydantic.IPvAnyAddress], "[]", "ipvanyaddress"),
    (pydantic.Base64Str, "", "base64"),
])
def test_unenforceable_types_are_refused_naming_the_field(tp, field, match):
    with pytest.raises(UnsupportedOutputTypeError, match=match) as info:
        output_format(tp)
    assert info.value.field == field


def test_free_string_formats_are_dropped_and_checked_ones_kept():
    for tp in (bytes, Path, pydantic.SecretStr):
        assert "format" not in json_schema_of(tp) and json_schema_of(tp)["type"] == "string"
    assert output_format(bytes).parse('"abc"') == b"abc"
    assert output_format(Path).parse('"a/b"') == Path("a/b")
    assert json_schema_of(pydantic.HttpUrl)["pattern"] == "^(http|https):"
    assert json_schema_of(pydantic.FiniteFloat) == {"type": "number", "minimum": -1e308, "maximum": 1e308}
    with pytest.raises(UnsupportedOutputTypeError) as info:
        output_format(list[pydantic.IPvAnyAddress])
    assert info.value.keyword == "format"


def test_refused_fields_inside_models_and_defs_are_named():
    @dataclasses.dataclass
    class Event:
        name: str
        when: Annotated[datetime.datetime, Field(lt=datetime.datetime(2030, 1, 1))]

    Holder = dataclasses.make_dataclass("Holder", [("events", list[Event])])
    with pytest.raises(UnsupportedOutputTypeError) as info:
        output_format(Event)
    assert info.value.field == "when"
    with pytest.raises(UnsupportedOutputTypeError) as info:
        output_format(Holder)
    assert info.value.field == "Event.when"

    class Tagged(pydantic.BaseModel):
        tags: list[str] = Field(json_schema_extra={"items": {"type": "string", "pattern": "(a)\\1"}})

    assert output_format(set[int]).parse("[3, 1]") == {1, 3}  # uniqueItems is enforced

    with pytest.raises(UnsupportedOutputTypeError, match=r"'tags\[\]'") as info:
        output_format(Tagged)
    assert info.value.field == "tags[]" and info.value.keyword == "pattern"


def test_types_pydantic_cannot_validate_are_refused():
    class PlainTypedDict(typing.TypedDict):
        a: int

    expected = "typing_extensions.TypedDict" if sys.version_info < (3, 12) else None
    if expected is not None:
        with pytest.raises(UnsupportedOutputTypeError, match=expected):
            output_format(PlainTypedDict)
    with pytest.raises(UnsupportedOutputTypeError, match="pydantic cannot validate"):
        output_format(object())
    with pytest.raises(UnsupportedTypeError):
        json_schema_of(typing.Callable[[int], int])


# ---- values are built and checked by pydantic ----------------------------------------------------

def test_values_are_built_by_pydantic():
    value = ('{"name": "Ann", "address": {"city": "Oslo"}, "level": 2, "tags": {"a": 1}, "pair": [3, "x"], '
             '"seen": true}')
    customer = output_format(Customer).parse(value)
    assert customer == Customer("Ann", Address(city="Oslo"), Level.HIGH, {"a": 1}, Pair(3, "x"), True)
    assert isinstance(customer.pair, Pair) and customer.level is Level.HIGH
    exact = "-0.1000000000000000000001"
    assert output_format(decimal.Decimal).parse(json.dumps(exact)) == decimal.Decimal(exact)
    assert output_format(datetime.timedelta).parse('"P1DT2H"') == datetime.timedelta(days=1, hours=2)
    assert output_format(uuid.UUID).parse('"12345678-1234-5678-1234-567812345678"') == uuid.UUID(int=0x12345678123456781234567812345678)


@pytest.mark.parametrize("tp, text, path", [
    (list[Annotated[int, Field(ge=0, le=99)]], "[80, 731, 59]", "[1]"),
    (Order, '{"id": 1, "items": [{"sku": 5}], "color": "red"}', "items[0].sku"),
    (Order, '{"id": 1, "items": [{"sku": "a", "qty": 10}], "color": "red"}', "items[0].qty"),
    (Order, '{"items": [], "color": "red"}', "id"),
    (Customer, '{"name": "A", "address": {"city": ""}, "level": 1, "tags": {}, "pair": [1, "a"], "seen": true}',
     "address.city"),
    (Point, '{"x": 1}', "y"),
    (dict[str, int], '{"a": "b"}', "a"),
    (datetime.date, '"yesterday"', ""),
    (Color, '"blue"', ""),
])
def test_invalid_values_name_the_field(tp, text, path):
    with pytest.raises(OutputValidationError) as info:
        output_format(tp).result(text, "stop")
    assert info.value.path == path and info.value.text == text


def test_output_that_is_not_json():
    with pytest.raises(OutputValidationError, match="not JSON") as info:
        output_format(Order).parse('{"id": 7,')
    assert info.value.path == ""


@pytest.mark.parametrize("loc, path", [((), ""), (("a",), "a"), ((0,), "[0]"), (("items", 2, "sku"), "items[2].sku"),
                                       (("a", "b", 0, 1), "a.b[0][1]")])
def test_loc_path(loc, path):
    assert loc_path(loc) == path


def json_document(value: Any) -> Any:
    """`value` as JSON text; non-finite floats are not JSON, so such examples are dropped."""
    try:
        return json.dumps(to_json(value), allow_nan=False)
    except ValueError:
        reject()


ROUND_TRIP_TYPES = [Order, list[Item], Point, dict[str, Optional[Color]], tuple[int, Literal["x", "y"]], Level, Pair]


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), tp=st.sampled_from(ROUND_TRIP_TYPES))
def test_values_round_trip_through_json(data, tp):
    value = data.draw(st.from_type(tp))
    try:  # from_type ignores Annotated bounds (Item.qty)
        TypeAdapter(tp).validate_python(to_json(value))
    except pydantic.ValidationError:
        reject()
    assert output_format(tp).parse(json_document(value)) == value


# ---- output formats --------------------------------------------------------------------------------

@pytest.mark.parametrize("tp", [Order, Point, Customer, Address, list[Item], Color, Literal["a", "b"], int, float,
                                bool, str, Optional[int], dict[str, int], Tree, Pair])
def test_every_supported_kind_lowers_to_a_grammar(tp):
    fmt = output_format(tp)
    assert fmt.structured_outputs == {"json": json_schema_of(tp)}
    assert fmt.response_format()["json_schema"]["schema"] == json_schema_of(tp)
    lower_json_schema(fmt.schema)


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


def test_regex_choice_and_json_schema_markers():
    fmt = output_format(Regex(r"\d{3}-[a-z]+"))
    assert fmt.structured_outputs == {"regex": r"\d{3}-[a-z]+"} and fmt.response_format() is None
    assert fmt.result("123-abc", "stop") == "123-abc"
    with pytest.raises(OutputValidationError):
        fmt.parse("12-abc")
    with pytest.raises(UnsupportedOutputTypeError, match="backreference"):
        output_format(Regex(r"(a)\1"))
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
    with pytest.raises(OutputValidationError) as info:
        schema.parse('{"n": "3"}')
    assert info.value.path == "n"
    with pytest.raises(UnsupportedOutputTypeError, match="'xs'"):
        output_format(JsonSchema({"properties": {"xs": {"type": "string", "pattern": "(a)\\1"}}}))


def test_output_formats_are_cached():
    assert output_format(Order) is output_format(Order)
    assert output_format(Regex("a+")) is output_format(Regex("a+"))
    unhashable = Annotated[int, Field(ge=0)]
    assert output_format(unhashable).schema == {"type": "integer", "minimum": 0}


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
