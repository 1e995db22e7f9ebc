"""JSON values back to Python types: `from_json(tp, value)` is the inverse of `json_schema_of`.

It builds the typed object (dataclass instances, enum members, tuples, datetimes, pydantic models via
`model_validate`) and checks the value on the way, raising `ValueMismatchError` with the path of the
first field that does not fit. Numbers follow JSON: an integral float is accepted as an `int` and an
`int` as a `float`; `bool` is never a number.
"""
from __future__ import annotations

import dataclasses
import datetime
import enum
import types
import typing
import uuid
from typing import Any

from formwork.schemas.python_types import (
    MAPPING_ORIGINS, SEQUENCE_ORIGINS, UnsupportedTypeError, is_pydantic_model, is_typeddict,
    literal_values, member_path, resolved_hints, type_name, typeddict_members, unwrap_annotated,
)

__all__ = ["ValueMismatchError", "from_json"]

_ISO_TYPES = (datetime.datetime, datetime.date, datetime.time)


class ValueMismatchError(ValueError):
    """A JSON value does not fit the Python type; `path` names the field (e.g. `Order.items[2].sku`)."""

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


def from_json(tp: Any, value: Any) -> Any:
    """`value` (as `json.loads` returns it) converted to `tp`; `ValueMismatchError` if it does not fit."""
    return _convert(tp, value, "")


def _convert(tp: Any, value: Any, path: str) -> Any:
    tp = unwrap_annotated(tp)
    if tp is Any or tp is object:
        return value
    if tp is None or tp is type(None):
        return _expect(value is None, None, "null", value, path)
    if tp is bool:
        return _expect(isinstance(value, bool), value, "a boolean", value, path)
    if tp is int:
        return _integer(value, path)
    if tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return _expect(ok, float(value) if ok else None, "a number", value, path)
    if tp is str:
        return _expect(isinstance(value, str), value, "a string", value, path)
    if tp in _ISO_TYPES or tp is uuid.UUID:
        return _parse_string(tp, value, path)
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return _literal(tp, value, path)
    if origin is typing.Union or origin is types.UnionType:
        return _union(tp, value, path)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum(tp, value, path)
    if is_pydantic_model(tp):
        return _pydantic(tp, value, path)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass(tp, value, path)
    if is_typeddict(tp):
        return _typeddict(tp, value, path)
    return _container(tp, origin, value, path)


def json_equal_scalar(a: Any, b: Any) -> bool:
    """Equality of JSON scalars: numbers by value (`1 == 1.0`), but `true` is not `1`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _expect(ok: bool, result: Any, expected: str, value: Any, path: str) -> Any:
    if not ok:
        raise ValueMismatchError(f"expected {expected}, got {_describe(value)}", path)
    return result


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _integer(value: Any, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return _expect(isinstance(value, int) and not isinstance(value, bool), value, "an integer", value, path)


def _parse_string(tp: type, value: Any, path: str) -> Any:
    _expect(isinstance(value, str), None, "a string", value, path)
    try:
        return tp(value) if tp is uuid.UUID else tp.fromisoformat(value)
    except ValueError as exc:
        raise ValueMismatchError(f"not a valid {tp.__name__}: {exc}", path) from None


def _literal(tp: Any, value: Any, path: str) -> Any:
    for arg, json_value in zip(typing.get_args(tp), literal_values(tp, path)):
        if json_equal_scalar(json_value, value):
            return arg
    raise ValueMismatchError(f"expected one of {literal_values(tp, path)!r}, got {_describe(value)}", path)


def _union(tp: Any, value: Any, path: str) -> Any:
    reasons = []
    for arm in typing.get_args(tp):
        try:
            return _convert(arm, value, path)
        except ValueMismatchError as exc:
            reasons.append(f"{type_name(arm)}: {exc.reason}")
    raise ValueMismatchError("fits no member of the union (" + "; ".join(reasons) + ")", path)


def _enum(tp: type[enum.Enum], value: Any, path: str) -> enum.Enum:
    for member in tp:
        if json_equal_scalar(member.value, value):
            return member
    raise ValueMismatchError(f"expected one of {[m.value for m in tp]!r} ({tp.__name__}), "
                             f"got {_describe(value)}", path)


def _pydantic(tp: type, value: Any, path: str) -> Any:
    import pydantic

    try:
        return tp.model_validate(value)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueMismatchError(f"{first['msg']}" + (f" (at {where})" if where else ""), path) from None


def _object_fields(value: Any, path: str, known: dict[str, Any], required: set[str]) -> dict[str, Any]:
    """Checks a JSON object against a closed set of keys; returns the converted members."""
    _expect(isinstance(value, dict), None, "an object", value, path)
    extra = [key for key in value if key not in known]
    if extra:
        raise ValueMismatchError(f"unexpected key {extra[0]!r}", path)
    missing = [key for key in known if key in required and key not in value]
    if missing:
        raise ValueMismatchError(f"missing required key {missing[0]!r}", path)
    return {key: _convert(known[key], item, member_path(path, key)) for key, item in value.items()}


def _dataclass(tp: type, value: Any, path: str) -> Any:
    hints = resolved_hints(tp, path)
    fields = [f for f in dataclasses.fields(tp) if f.init]
    known = {f.name: hints.get(f.name, Any) for f in fields}
    required = {f.name for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return tp(**_object_fields(value, path, known, required))


def _typeddict(tp: type, value: Any, path: str) -> dict[str, Any]:
    members = typeddict_members(tp, path)
    known = {key: hint for key, (hint, _) in members.items()}
    return _object_fields(value, path, known, {key for key, (_, required) in members.items() if required})


def _container(tp: Any, origin: Any, value: Any, path: str) -> Any:
    args = typing.get_args(tp)
    if tp in SEQUENCE_ORIGINS or origin in SEQUENCE_ORIGINS:
        _expect(isinstance(value, list), None, "an array", value, path)
        item = args[0] if args else Any
        return [_convert(item, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if tp is tuple or origin is tuple:
        _expect(isinstance(value, list), None, "an array", value, path)
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            item = args[0] if args else Any
            return tuple(_convert(item, v, f"{path}[{i}]") for i, v in enumerate(value))
        arity = 0 if args == ((),) else len(args)
        if len(value) != arity:
            raise ValueMismatchError(f"expected an array of {arity} items, got {len(value)}", path)
        return tuple(_convert(arg, v, f"{path}[{i}]") for i, (arg, v) in enumerate(zip(args, value)))
    if tp in MAPPING_ORIGINS or origin in MAPPING_ORIGINS:
        _expect(isinstance(value, dict), None, "an object", value, path)
        item = args[1] if args else Any
        return {key: _convert(item, v, f"{path}[{key!r}]") for key, v in value.items()}
    raise UnsupportedTypeError(f"{type_name(tp)} cannot be built from JSON", path)
