"""Python types to JSON Schema, by pydantic: `json_schema_of(tp)` and `type_adapter(tp)`.

The schema of any type is pydantic's own (`TypeAdapter(tp).json_schema()`, validation mode), so
models, dataclasses, TypedDicts, NamedTuples, enums, `Literal`, unions, `Annotated` constraints,
`constr`/`conint`, `StringConstraints`, dates and UUIDs mean what pydantic says they mean. A
schema is a generation target here, so `GenerationSchema` changes what pydantic emits in a few places
where its schema is looser than its validator (a value the schema allows would then fail validation):

- objects (models, dataclasses, TypedDicts) are closed unless they allow extra keys: members the
  type would drop are not worth generating;
- `Decimal` is a string of decimal digits, read exactly (pydantic's schema allows any string, or a
  number, which pydantic reads as a float: `1e400` would be infinite); with bounds, a bounded JSON
  number (no exponent), as precise as a float;
- a float's exclusive bound becomes the inclusive bound of the nearest float inside it, since
  pydantic compares the parsed float, and a decimal just inside the bound may round onto it (not
  next to 0, whose neighbour 5e-324 has 300 digits: `gt=0` still admits a 0.000...1 that rounds to 0);
- dict keys constrained by a `pattern` are closed (`additionalProperties: false`);
- dates, times and durations get a `pattern` beside their `format` (see `FORMAT_PATTERNS`), URLs
  with allowed schemes (`HttpUrl`) a pattern naming them, floats that must be finite bounds (+-1e308);
- the formats of strings pydantic takes as they are (bytes, paths, secrets) are dropped.

What has no schema the validator agrees with is refused with `UnsupportedTypeError` naming the field:
dict keys that are not strings (str, string `Literal`s and `Enum`s are fine), `complex`, `Json[...]`, `Decimal` `max_digits`/`decimal_places`, and
bounds, past/future and naive checks on dates, times and durations.
"""
from __future__ import annotations

import decimal
import functools
import math
import re
import typing
from collections.abc import Iterator
from typing import Any

import pydantic
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from formwork.schemas.pointer import escape_token, split_pointer

__all__ = ["GenerationSchema", "UnsupportedTypeError", "field_path", "json_schema_of", "type_adapter", "type_name"]

#: The key of the placeholder schema `GenerationSchema` leaves where a type cannot be described.
REFUSED = "x-formwork-refused"

_TEMPORAL_BOUNDS = ("gt", "ge", "lt", "le")

_YEAR = "([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"

#: Patterns beside a `format` where the format (RFC 3339) allows what pydantic refuses: year 0000, the
#: leap second 60, and duration numbers past what a `timedelta` holds (6 digits each keep it under
#: 999,999,999 days).
FORMAT_PATTERNS = {
    "date": f"^{_YEAR}-",
    "date-time": f"^{_YEAR}-[0-9]{{2}}-[0-9]{{2}}[Tt]{_TIME}",
    "time": f"^{_TIME}",
    "duration": "^[^0-9]*([0-9]{1,6}[^0-9]+)*$",
}

#: Formats pydantic emits for strings it takes whatever they hold (bytes, paths, secrets): annotations
#: the grammar need not know.
FREE_FORMATS = frozenset({"binary", "path", "password"})

#: The bound of a float that must be finite (a round number below the largest float: it compiles in
#: 0.6 s, where 1.7976931348623157e308 takes 2.5 s).
FINITE_BOUND = 1e308

#: A `Decimal` without bounds: the digits pydantic reads exactly.
DECIMAL_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$"

#: The longest inclusive float bound (without an exponent) `GenerationSchema` puts for an exclusive one.
MAX_BOUND_CHARS = 40


class UnsupportedTypeError(TypeError):
    """A Python type that has no JSON Schema formwork can generate; `path` names the field
    (e.g. `Order.items[].tags`)."""

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


def type_name(tp: Any) -> str:
    """A readable name: `Order`, `list[int]`, `Literal['a', 'b']`, `int | None`."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "").replace("typing_extensions.", "")


def type_adapter(tp: Any) -> pydantic.TypeAdapter:
    """pydantic's `TypeAdapter` of `tp`; `UnsupportedTypeError` when pydantic cannot build one."""
    try:
        hash(tp)
    except TypeError:  # e.g. Annotated[int, Field(...)]: FieldInfo is unhashable
        return _adapter(tp)
    return _cached_adapter(tp)


@functools.lru_cache(maxsize=256)
def _cached_adapter(tp: Any) -> pydantic.TypeAdapter:
    return _adapter(tp)


def _adapter(tp: Any) -> pydantic.TypeAdapter:
    try:
        return pydantic.TypeAdapter(tp)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as exc:
        raise UnsupportedTypeError(f"pydantic cannot validate {type_name(tp)}: {_first_line(exc)}") from None


def json_schema_of(tp: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the values pydantic validates as `tp`, for generation."""
    adapter = type_adapter(tp)
    try:
        schema = adapter.json_schema(schema_generator=GenerationSchema)
    except pydantic.PydanticInvalidForJsonSchema as exc:
        raise UnsupportedTypeError(f"{type_name(tp)} has no JSON Schema: {_first_line(exc)}") from None
    _drop_free_formats(schema)
    for pointer, reason in _refusals(schema, ""):
        raise UnsupportedTypeError(reason, field_path(pointer))
    return schema


def _drop_free_formats(node: Any) -> None:
    """Remove the `format`s of strings pydantic takes whatever they hold (`FREE_FORMATS`)."""
    if isinstance(node, dict):
        if node.get("format") in FREE_FORMATS and node.get("type") == "string":
            del node["format"]
        for value in node.values():
            _drop_free_formats(value)
    elif isinstance(node, list):
        for value in node:
            _drop_free_formats(value)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]


def _refusals(node: Any, pointer: str) -> Iterator[tuple[str, str]]:
    """(pointer, reason) of every placeholder `GenerationSchema` left in the schema."""
    if isinstance(node, dict):
        if REFUSED in node:
            yield pointer, node[REFUSED]
        for key, value in node.items():
            yield from _refusals(value, f"{pointer}/{escape_token(key)}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _refusals(value, f"{pointer}/{i}")


def _refused(reason: str) -> JsonSchemaValue:
    return {REFUSED: reason}


class GenerationSchema(GenerateJsonSchema):
    """pydantic's schema generator, tightened where its schema allows values its validator refuses."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        return _closed(super().model_schema(schema))

    def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
        return _closed(super().dataclass_schema(schema))

    def typed_dict_schema(self, schema: core_schema.TypedDictSchema) -> JsonSchemaValue:
        return _closed(super().typed_dict_schema(schema))

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        if schema.get("max_digits") is not None or schema.get("decimal_places") is not None:
            return _refused("Decimal max_digits/decimal_places are not in pydantic's JSON Schema, so the "
                            "grammar cannot enforce them; use ge/le bounds instead")
        bounds = {key: None if schema.get(key) is None else float(schema[key])
                  for key in ("multiple_of", *_TEMPORAL_BOUNDS)}
        if not any(bound is not None for bound in bounds.values()):
            return {"type": "string", "pattern": DECIMAL_PATTERN}
        return self.float_schema(core_schema.float_schema(allow_inf_nan=False, **bounds))

    def float_schema(self, schema: core_schema.FloatSchema) -> JsonSchemaValue:
        json_schema = super().float_schema(schema)
        if schema.get("allow_inf_nan") is False:  # 1e400 is no finite float: bound the number
            json_schema.setdefault("maximum", FINITE_BOUND)
            json_schema.setdefault("minimum", -FINITE_BOUND)
        for exclusive, inclusive, toward, tighter in (("exclusiveMaximum", "maximum", -math.inf, min),
                                                      ("exclusiveMinimum", "minimum", math.inf, max)):
            inside = _float_inside(json_schema.get(exclusive), toward)
            if inside is not None:
                del json_schema[exclusive]
                json_schema[inclusive] = tighter(inside, json_schema.get(inclusive, -toward))
        return json_schema

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        keys = schema.get("keys_schema")
        if keys is not None and not _string_keys(keys):
            return _refused(f"JSON object keys are strings; pydantic would parse them as {keys.get('type')} "
                            "keys, which the grammar cannot check (use dict[str, ...] or a model)")
        json_schema = super().dict_schema(schema)
        if "patternProperties" in json_schema:
            json_schema.setdefault("additionalProperties", False)
        return json_schema

    def url_schema(self, schema: core_schema.UrlSchema) -> JsonSchemaValue:
        json_schema = super().url_schema(schema)
        schemes = schema.get("allowed_schemes")
        if schemes:
            json_schema["pattern"] = "^(" + "|".join(re.escape(scheme) for scheme in schemes) + "):"
        return json_schema

    def json_schema(self, schema: core_schema.JsonSchema) -> JsonSchemaValue:
        return _refused("Json[...] is a string holding JSON text, which the grammar does not constrain")

    def complex_schema(self, schema: core_schema.ComplexSchema) -> JsonSchemaValue:
        return _refused("complex numbers are strings like '1+2j' to pydantic, which its schema "
                        "({\"type\": \"string\"}) does not describe")

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        return _temporal(schema) or _within(super().datetime_schema(schema))

    def date_schema(self, schema: core_schema.DateSchema) -> JsonSchemaValue:
        return _temporal(schema) or _within(super().date_schema(schema))

    def time_schema(self, schema: core_schema.TimeSchema) -> JsonSchemaValue:
        return _temporal(schema) or _within(super().time_schema(schema))

    def timedelta_schema(self, schema: core_schema.TimedeltaSchema) -> JsonSchemaValue:
        return _temporal(schema) or _within(super().timedelta_schema(schema))


def _float_inside(bound: float | None, toward: float) -> float | None:
    """The float next to an exclusive `bound` on its inside, when it is short enough to spell without
    an exponent (bounded numbers have none); None otherwise (e.g. next to 0: 5e-324)."""
    if bound is None:
        return None
    inside = math.nextafter(float(bound), toward)
    return inside if len(format(decimal.Decimal(repr(inside)), "f")) <= MAX_BOUND_CHARS else None


def _string_keys(keys: Any) -> bool:
    """Dict keys pydantic reads from JSON strings as they are: `str` (constrained or not), string
    `Literal`s and `Enum`s (their schema goes to `propertyNames`)."""
    kind = keys.get("type")
    if kind == "literal":
        return all(isinstance(value, str) for value in keys["expected"])
    if kind == "enum":
        return keys.get("sub_type") == "str"
    return kind in ("str", "any")


def _closed(json_schema: JsonSchemaValue) -> JsonSchemaValue:
    """An object schema without a word on extra keys gets `additionalProperties: false`."""
    if json_schema.get("type") == "object":
        json_schema.setdefault("additionalProperties", False)
    return json_schema


def _within(json_schema: JsonSchemaValue) -> JsonSchemaValue:
    """A date, time or duration string narrowed by `FORMAT_PATTERNS` to what pydantic parses."""
    pattern = FORMAT_PATTERNS.get(json_schema.get("format"))
    if pattern is not None and json_schema.get("type") == "string":
        json_schema["pattern"] = pattern
    return json_schema


def _temporal(schema: Any) -> JsonSchemaValue | None:
    """A placeholder refusing the checks of a date, time or duration that pydantic's schema drops: bounds,
    past/future (`PastDate`, ...), naive or fixed-offset date-times."""
    checks = [key for key in _TEMPORAL_BOUNDS if schema.get(key) is not None]
    checks += [f"now_op={schema['now_op']!r}"] if schema.get("now_op") else []
    if schema.get("tz_constraint") not in (None, "aware"):  # RFC 3339 date-times always have an offset
        checks.append(f"tz_constraint={schema['tz_constraint']!r}")
    if not checks:
        return None
    return _refused(f"{schema['type']} checks ({', '.join(checks)}) are not in pydantic's JSON Schema, so the "
                    "grammar cannot enforce them")


def field_path(pointer: str) -> str:
    """A readable field path for a JSON pointer into a schema: `/properties/items/items/properties/sku/
    pattern` -> `items[].sku`; a `$defs` entry starts a path at its name (`Item.sku`)."""
    tokens = split_pointer(pointer) if pointer else []
    parts: list[str] = []
    i = 0
    while i < len(tokens):
        token, following = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else None
        if token in ("$defs", "definitions") and following is not None:
            parts = [following]
        elif token in ("properties", "patternProperties") and following is not None:
            parts.append(("." if parts else "") + following)
        elif token == "prefixItems" and following is not None:
            parts.append(f"[{following}]")
        elif token not in ("anyOf", "oneOf", "allOf") or following is None:  # (a branch and its index add none)
            parts.append({"items": "[]", "additionalItems": "[]", "additionalProperties": "[*]"}.get(token, ""))
            i += 1
            continue
        i += 2
    return "".join(parts)
