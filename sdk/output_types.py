"""Output types of the typed SDK: what to ask the engine for, and how the text becomes a value.

`output_format(T)` turns an output type into an `OutputFormat`: its `structured_outputs` constraint
(`{"json": schema}`, `{"regex": ...}` or `{"choice": [...]}`), checked up front so that a type the
engine cannot enforce fails before any generation, naming the field; and `result(text, finish_reason)`,
which validates the generated text into a `T`.

Output types: any type pydantic validates (models, dataclasses, TypedDicts, NamedTuples, enums,
`Literal`, unions, `Annotated` constraints, dates, UUIDs, `Decimal`, ...): the schema is pydantic's
(see `formwork.schemas.python_types`) and the value is built by `TypeAdapter.validate_json`. Or one
of the constraint markers pydantic has no type for: `Regex(pattern)`, `Choice([...])` (both give a
`str`) and `JsonSchema(schema)` (gives the parsed JSON value).
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
import pydantic

from formwork.grammar.automaton import compile_dfa
from formwork.grammar.dfa import DFA
from formwork.grammar.errors import GrammarError
from formwork.grammar.json_schema import SchemaLoweringError, lower_json_schema
from formwork.grammar.json_schema.ecma_validation import ecma_validator
from formwork.grammar.regex_parser import parse_regex
from formwork.schemas.python_types import UnsupportedTypeError, field_path, json_schema_of, type_adapter, type_name
from formwork.sdk.errors import (GenerationError, OutputValidationError, TruncatedOutputError,
                                 UnsupportedOutputTypeError)

__all__ = ["Choice", "JsonSchema", "OutputFormat", "PartialText", "Regex", "output_format"]


class PartialText(str):
    """A piece of streamed text: what `stream` yields before the final, parsed value."""


@dataclass(frozen=True)
class Regex:
    """Constrain the output to a regular expression (JSON Schema's ECMAScript subset, matched in
    full); the result is the matching `str`."""

    pattern: str


@dataclass(frozen=True, init=False)
class Choice:
    """Constrain the output to exactly one of some strings; the result is that `str`."""

    choices: tuple[str, ...]

    def __init__(self, choices: Iterable[str]) -> None:
        if isinstance(choices, str):
            raise TypeError("Choice takes a list of strings, not one string")
        items = tuple(choices)
        if not items or not all(isinstance(c, str) for c in items):
            raise TypeError(f"Choice needs a non-empty list of strings, got {items!r}")
        object.__setattr__(self, "choices", items)


@dataclass(frozen=True, init=False)
class JsonSchema:
    """Constrain the output to a JSON Schema given as a dict (or JSON text); the result is the
    parsed JSON value."""

    text: str  # canonical JSON, so the marker is hashable
    name: str

    def __init__(self, schema: dict[str, Any] | bool | str, name: str = "output") -> None:
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except json.JSONDecodeError as exc:
                raise UnsupportedOutputTypeError(f"the schema is not valid JSON: {exc}") from None
        if not isinstance(schema, (dict, bool)):
            raise UnsupportedOutputTypeError(f"a JSON Schema is an object or a boolean, not {type(schema).__name__}")
        object.__setattr__(self, "text", json.dumps(schema))  # key order kept: properties are emitted in it
        object.__setattr__(self, "name", name)

    @property
    def schema(self) -> dict[str, Any] | bool:
        return json.loads(self.text)


class OutputFormat:
    """An output type, its constraint and its parser. Build with `output_format(T)`."""

    def __init__(self, output_type: Any) -> None:
        self.output_type = output_type
        self.schema: dict[str, Any] | bool | None = None
        self._dfa: DFA | None = None
        self._validator: Any = None
        self._adapter: pydantic.TypeAdapter | None = None
        if isinstance(output_type, Regex):
            self.name = "regex"
            self._dfa = _regex_dfa(output_type.pattern)
            self.structured_outputs: dict[str, Any] = {"regex": output_type.pattern}
        elif isinstance(output_type, Choice):
            self.name = "choice"
            self.structured_outputs = {"choice": list(output_type.choices)}
        elif isinstance(output_type, JsonSchema):
            self.name = output_type.name
            self.schema = output_type.schema
            _check_enforceable(self.schema, self.name)
            self._validator = ecma_validator(jsonschema.validators.validator_for(self.schema))(self.schema)
            self.structured_outputs = {"json": self.schema}
        else:
            self.name = type_name(output_type)
            self.schema, self._adapter = _schema_of(output_type)
            _check_enforceable(self.schema, self.name, warnings_fail=True)
            self.structured_outputs = {"json": self.schema}

    def __repr__(self) -> str:
        return f"OutputFormat({self.name})"

    def response_format(self) -> dict[str, Any] | None:
        """OpenAI's `response_format` for a JSON output (None for regex and choice constraints)."""
        if self.schema is None:
            return None
        name = re.sub(r"[^A-Za-z0-9_-]", "_", self.name)[:64] or "output"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": self.schema, "strict": True}}

    def result(self, text: str, finish_reason: str | None, max_tokens: int | None = None) -> Any:
        """The typed value of a finished generation: `TruncatedOutputError` when it hit the token limit,
        `GenerationError` when it was aborted or failed."""
        if finish_reason == "length":
            raise TruncatedOutputError(text, max_tokens=max_tokens)
        if finish_reason in ("abort", "error"):
            raise GenerationError(f"generation ended with finish reason {finish_reason!r} "
                                  f"(partial text: {text[:200]!r})")
        return self.parse(text)

    def parse(self, text: str) -> Any:
        """Validate `text` into the output type; `OutputValidationError` names what does not fit."""
        if isinstance(self.output_type, Regex):
            if not self._dfa.accepts(text.encode("utf-8")):
                raise OutputValidationError(f"{text!r} does not match {self.output_type.pattern!r}", text=text)
            return text
        if isinstance(self.output_type, Choice):
            if text not in self.output_type.choices:
                raise OutputValidationError(f"{text!r} is not one of {list(self.output_type.choices)!r}", text=text)
            return text
        if self._adapter is not None:
            return self._validate(text)
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OutputValidationError(f"the output is not JSON ({exc}): {text[:200]!r}", text=text) from None
        error = jsonschema.exceptions.best_match(self._validator.iter_errors(value))
        if error is not None:
            where = loc_path(error.absolute_path)
            raise OutputValidationError(f"the output does not match the schema of {self.name}"
                                        f"{' at ' + where if where else ''}: {error.message}", text=text, path=where)
        return value

    def _validate(self, text: str) -> Any:
        """pydantic's `validate_json`; its first error becomes an `OutputValidationError`."""
        try:
            return self._adapter.validate_json(text)
        except pydantic.ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            if first["type"] == "json_invalid":
                raise OutputValidationError(f"the output is not JSON ({first['msg']}): {text[:200]!r}",
                                            text=text) from None
            where = loc_path(first["loc"])
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            raise OutputValidationError(f"the output does not fit {self.name}{' at ' + where if where else ''}: "
                                        f"{first['msg']}{more}", text=text, path=where) from None


def loc_path(loc: Sequence[str | int]) -> str:
    """A field path from an error location: `("items", 0, "sku")` -> `items[0].sku`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def output_format(output_type: Any) -> OutputFormat:
    """The (cached) `OutputFormat` of an output type; `UnsupportedOutputTypeError` if it cannot be
    enforced."""
    if isinstance(output_type, OutputFormat):
        return output_type
    try:
        return _cached_format(output_type)
    except TypeError as exc:
        if isinstance(exc, UnsupportedOutputTypeError) or "unhashable" not in str(exc):
            raise
        return OutputFormat(output_type)


@functools.lru_cache(maxsize=256)
def _cached_format(output_type: Any) -> OutputFormat:
    return OutputFormat(output_type)


def _schema_of(output_type: Any) -> tuple[dict[str, Any], pydantic.TypeAdapter]:
    """pydantic's schema (for generation) and validator of an output type."""
    try:
        return json_schema_of(output_type), type_adapter(output_type)
    except UnsupportedTypeError as exc:
        where = f" (field {exc.path!r})" if exc.path else ""
        raise UnsupportedOutputTypeError(f"output type {type_name(output_type)} is not supported{where}: {exc.reason}",
                                         field=exc.path) from None


def _check_enforceable(schema: dict[str, Any] | bool, name: str, *, warnings_fail: bool = False) -> None:
    """Lower the schema (no vocabulary needed) so an unenforceable keyword fails now, naming the field;
    with `warnings_fail`, so does a keyword the compiler only warns about (e.g. an unknown `format`),
    since pydantic would check it after generation."""
    try:
        warnings = lower_json_schema(schema).warnings
    except SchemaLoweringError as exc:
        field = field_path(exc.pointer)
        where = f"field {field!r}" if field else "the root"
        raise UnsupportedOutputTypeError(f"output type {name} cannot be enforced: {where} uses {exc.keyword!r}: "
                                         f"{exc.reason}", field=field, keyword=exc.keyword) from None
    except GrammarError as exc:
        raise UnsupportedOutputTypeError(f"output type {name} cannot be enforced: {exc}") from None
    if warnings_fail and warnings:
        place = _WARNING_PLACE.match(warnings[0])
        field = field_path(place["pointer"]) if place else None
        raise UnsupportedOutputTypeError(f"output type {name} cannot be enforced: {warnings[0]}, but pydantic "
                                         "checks it", field=field, keyword=place["keyword"] if place else None)


#: The keyword and JSON pointer a lowering warning starts with (`format at /properties/ip/format: ...`).
_WARNING_PLACE = re.compile(r"(?P<keyword>\S+) at (?P<pointer>(/\S*)?): ")


def _regex_dfa(pattern: str) -> DFA:
    if not isinstance(pattern, str):
        raise TypeError(f"Regex pattern must be a str, got {type(pattern).__name__}")
    try:
        return compile_dfa(parse_regex(pattern))
    except GrammarError as exc:
        raise UnsupportedOutputTypeError(f"regex {pattern!r} cannot be enforced: {exc}") from None
