"""Typed reads of JSON request fields: each mismatch raises an error naming the field (`param`)."""

from __future__ import annotations

import math
from typing import Any

from formwork.server.errors import InvalidRequestError, InvalidTypeError, MissingFieldError

_MISSING = object()


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


class Fields:
    """A JSON object being read field by field; `prefix` makes nested params read `a.b`."""

    def __init__(self, data: dict[str, Any], prefix: str = ""):
        self.data = data
        self.prefix = prefix
        self.read: set[str] = set()

    def param(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def raw(self, name: str, default: Any = None) -> Any:
        self.read.add(name)
        value = self.data.get(name, _MISSING)
        return default if value is _MISSING or value is None else value

    def present(self, name: str) -> bool:
        return self.data.get(name) is not None

    def required(self, name: str) -> Any:
        value = self.raw(name, _MISSING)
        if value is _MISSING:
            raise MissingFieldError(f"'{self.param(name)}' is a required property", param=self.param(name))
        return value

    def _fail(self, name: str, expected: str, value: Any) -> InvalidTypeError:
        return InvalidTypeError(f"'{self.param(name)}' must be {expected}, got {_type_name(value)}",
                                param=self.param(name))

    def bool(self, name: str, default: bool | None = None) -> bool | None:
        value = self.raw(name, default)
        if value is not default and not isinstance(value, bool):
            raise self._fail(name, "a boolean", value)
        return value

    def int(self, name: str, default: int | None = None) -> int | None:
        value = self.raw(name, default)
        if value is default:
            return value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(name, "an integer", value)
        return value

    def number(self, name: str, default: float | None = None) -> float | None:
        value = self.raw(name, default)
        if value is default:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self._fail(name, "a finite number", value)
        return float(value)

    def str(self, name: str, default: str | None = None) -> str | None:
        value = self.raw(name, default)
        if value is not default and not isinstance(value, str):
            raise self._fail(name, "a string", value)
        return value

    def object(self, name: str) -> dict[str, Any] | None:
        value = self.raw(name)
        if value is not None and not isinstance(value, dict):
            raise self._fail(name, "an object", value)
        return value

    def nested(self, name: str) -> "Fields | None":
        value = self.object(name)
        return None if value is None else Fields(value, prefix=f"{self.param(name)}.")

    def str_list(self, name: str) -> list[str] | None:
        """A string or an array of strings, as a list."""
        value = self.raw(name)
        if value is None:
            return None
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
            raise self._fail(name, "a string or an array of strings", value)
        return items

    def int_list(self, name: str) -> list[int] | None:
        value = self.raw(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in value):
            raise self._fail(name, "an array of integers", value)
        return value

    def choice(self, name: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
        value = self.str(name, default)
        if value is not None and value not in allowed:
            raise InvalidRequestError(f"'{self.param(name)}' must be one of {list(allowed)}, got {value!r}",
                                      param=self.param(name))
        return value

    def unread(self) -> list[str]:
        """Fields present in the object that nothing has read (logged and ignored, like vLLM)."""
        return sorted(set(self.data) - self.read)
