"""The tool fields of a chat request (`tools`, `tool_choice`, `parallel_tool_calls`), checked, and
the tagged-regions constraint that makes every call's arguments valid under its schema.

- `auto`: free text in which the format's trigger opens a call of any offered function;
- `required`: only calls (at least one), whitespace between them;
- a named function: only calls of that function;
- `none`: no constraint, and the reply is not read for calls.
Without `parallel_tool_calls` the reply ends when its first call closes. With `auto` and the
request's own constraint (`response_format` / `structured_outputs`) the reply is either calls only or
one text of that constraint in which no call trigger occurs (`text_rule`); `required` and a named
function reply with calls only, so the constraint has no text to hold there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from jsonschema import SchemaError
from jsonschema.validators import validator_for

from formwork.server.errors import (
    InvalidConstraintError, InvalidRequestError, InvalidTypeError, MissingFieldError, UnsupportedFieldError,
)
from formwork.server.fields import Fields
from formwork.server.tools.formats import ToolCallFormat

TOOL_CHOICES = ("none", "auto", "required")
FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # OpenAI's rule for function names


@dataclass(frozen=True)
class FunctionTool:
    """One offered function: its name, description, arguments schema (a JSON object's) and `strict`."""

    name: str
    description: str | None
    parameters: dict[str, Any]
    strict: bool | None

    def to_template(self) -> dict[str, Any]:
        """The tool as chat templates take it (OpenAI's shape)."""
        function: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            function["description"] = self.description
        function["parameters"] = self.parameters
        return {"type": "function", "function": function}


@dataclass(frozen=True)
class ToolsRequest:
    """The checked tool fields; `choice` is `none`, `auto`, `required` or `function` (then `function`
    names it)."""

    tools: tuple[FunctionTool, ...]
    choice: str
    function: str | None
    parallel: bool

    @property
    def calls_allowed(self) -> bool:
        return self.choice != "none"

    @property
    def callable(self) -> tuple[FunctionTool, ...]:
        """The functions the reply may call."""
        return tuple(t for t in self.tools if self.function in (None, t.name))

    def constraint(self, fmt: ToolCallFormat, text: dict[str, Any] | None = None) -> dict[str, Any]:
        """`structured_outputs` for this choice in the model's call format; `text` (a tags `text` rule,
        `auto` only) is what a reply without calls must be instead of free text."""
        tags = [{"begin": fmt.begin(t.name), "schema": t.parameters, "end": fmt.end} for t in self.callable]
        spec = {"tags": tags, "triggers": [fmt.trigger], "free_text": self.choice == "auto",
                "at_least_one": self.choice != "auto", "stop_after_first": not self.parallel}
        if text is not None and self.choice == "auto":
            spec.update(text=text, free_text=False)
        return {"tags": spec}


TEXT_KINDS = {"json": "schema", "regex": "regex", "grammar": "ebnf"}  # constraint kind -> tags text kind


def text_rule(constraint: dict[str, Any], param: str) -> dict[str, Any]:
    """The tags `text` rule for a request's own constraint beside tools; a kind that has none (choice,
    tags, or options such as disable_any_whitespace) is a 400 naming `param`."""
    if constraint.get("json_object"):
        constraint = {"json": {"type": "object"}}
    kinds = [k for k in constraint if k in TEXT_KINDS]
    if len(constraint) != 1 or not kinds:
        raise UnsupportedFieldError(f"'{param}' together with tool calls takes a JSON schema, json_object, a regex or "
                                    f"a grammar without options, got {sorted(constraint)}", param=param)
    return {TEXT_KINDS[kinds[0]]: constraint[kinds[0]]}


def parse_tools(f: Fields, max_schema_bytes: int) -> ToolsRequest | None:
    """The request's tool fields, or None when it offers no tools; each fault is a 400 naming its field
    (the arguments schemas together may take `max_schema_bytes`)."""
    parallel = f.bool("parallel_tool_calls", True)
    raw_tools = f.raw("tools")
    raw_choice = f.raw("tool_choice")
    if raw_tools is None:
        if raw_choice not in (None, "none"):
            raise InvalidRequestError("'tool_choice' is only allowed when 'tools' are specified", param="tool_choice")
        return None
    if not isinstance(raw_tools, list) or not raw_tools:
        raise InvalidTypeError("'tools' must be a non-empty array of tool objects", param="tools")
    tools = tuple(_parse_tool(tool, f"tools.{i}") for i, tool in enumerate(raw_tools))
    size = sum(len(json.dumps(t.parameters, separators=(",", ":")).encode()) for t in tools)
    if size > max_schema_bytes:
        raise InvalidConstraintError(f"the tools' parameters schemas take {size} bytes; the limit is "
                                     f"{max_schema_bytes} bytes", param="tools", code="schema_too_large")
    names = [t.name for t in tools]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InvalidRequestError(f"'tools' names the function {name!r} twice", param=f"tools.{i}.function.name")
    choice, function = _parse_choice(raw_choice, names)
    return ToolsRequest(tools, choice, function, bool(parallel))


def _parse_tool(raw: Any, param: str) -> FunctionTool:
    if not isinstance(raw, dict):
        raise InvalidTypeError(f"'{param}' must be an object", param=param)
    tool = Fields(raw, prefix=f"{param}.")
    tool.choice("type", ("function",))
    function = tool.nested("function")
    if function is None:
        raise MissingFieldError(f"'{param}.function' is a required property", param=f"{param}.function")
    name = function.str("name")
    if name is None:
        raise MissingFieldError(f"'{param}.function.name' is a required property", param=f"{param}.function.name")
    if not FUNCTION_NAME.match(name):
        raise InvalidRequestError(f"'{param}.function.name' must be 1 to 64 letters, digits, underscores or "
                                  f"dashes, got {name!r}", param=f"{param}.function.name")
    return FunctionTool(name, function.str("description"), _parameters(function.raw("parameters"), f"{param}.function"),
                        function.bool("strict"))


def _parameters(schema: Any, param: str) -> dict[str, Any]:
    """The arguments schema: a JSON Schema of an object (no `parameters`: an object of anything)."""
    param = f"{param}.parameters"
    if schema is None or schema is True:
        return {"type": "object"}
    if not isinstance(schema, dict):
        raise InvalidTypeError(f"'{param}' must be a JSON Schema object", param=param)
    if not isinstance(schema.get("$schema", ""), str):
        raise InvalidConstraintError(f"'{param}.$schema' must be a string (a meta-schema URI)", param=param)
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise InvalidConstraintError(f"'{param}' is not a valid JSON Schema: {exc.message}"
                                     + (f" (at {where})" if where else ""), param=param) from None
    kind = schema.get("type", "object")
    if kind != "object":
        raise InvalidConstraintError(f"'{param}' must describe a JSON object (\"type\": \"object\"), got "
                                     f"\"type\": {kind!r}", param=param)
    return schema if "type" in schema else {**schema, "type": "object"}


def _parse_choice(raw: Any, names: list[str]) -> tuple[str, str | None]:
    if raw is None:
        return "auto", None
    if isinstance(raw, str):
        if raw not in TOOL_CHOICES:
            raise InvalidRequestError(f"'tool_choice' must be one of {list(TOOL_CHOICES)} or a function object, "
                                      f"got {raw!r}", param="tool_choice")
        return raw, None
    if not isinstance(raw, dict):
        raise InvalidTypeError("'tool_choice' must be a string or an object", param="tool_choice")
    choice = Fields(raw, prefix="tool_choice.")
    choice.choice("type", ("function",))
    function = choice.nested("function")
    name = function.str("name") if function is not None else None
    if name is None:
        raise MissingFieldError("'tool_choice.function.name' is a required property", param="tool_choice.function.name")
    if name not in names:
        raise InvalidRequestError(f"'tool_choice' names the function {name!r}, which is not among 'tools' "
                                  f"({', '.join(names)})", param="tool_choice.function.name")
    return "function", name
