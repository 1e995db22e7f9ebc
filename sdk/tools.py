"""Tools for the typed SDK: Python functions and pydantic models as OpenAI tools, and typed calls back.

    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        "Get the current weather in a city."
    calls = llm.generate(messages, tools=[get_weather], tool_choice="required")
    calls[0].arguments.city   # a validated pydantic model of the function's parameters
    calls[0]()                # runs get_weather(**arguments)

A function's schema comes from its signature (pydantic, as for `output_type`) and its description
from its docstring's first paragraph; a pydantic model's from `model_json_schema()` and its
docstring, named after the class (as `openai.pydantic_function_tool` names it).
"""
from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic

from formwork.sdk.errors import OutputValidationError, TruncatedOutputError
from formwork.server.tools.request import FunctionTool, ToolsRequest

TOOL_CHOICES = ("auto", "required", "none")


@dataclass(frozen=True)
class Tool:
    """One tool: its name, description, the pydantic model of its arguments, and the function to run
    (None for a pydantic-model tool, whose arguments are the value itself)."""

    name: str
    description: str | None
    arguments_model: type[pydantic.BaseModel]
    function: Callable[..., Any] | None = None

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI tool definition (strict: the server enforces the schema)."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = self.arguments_model.model_json_schema()
        function["strict"] = True
        return {"type": "function", "function": function}


def as_tool(obj: Any) -> Tool:
    """A `Tool` from a Python function or a pydantic model class; anything else raises TypeError."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, type) and issubclass(obj, pydantic.BaseModel):
        return Tool(obj.__name__, _description(obj), obj)
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return Tool(obj.__name__, _description(obj), _arguments_model(obj), obj)
    raise TypeError(f"a tool is a Python function or a pydantic model class, got {obj!r}")


def _description(obj: Any) -> str | None:
    doc = inspect.getdoc(obj)
    if not doc or (isinstance(obj, type) and doc == inspect.getdoc(pydantic.BaseModel)):
        return None
    return doc.split("\n\n")[0].strip() or None


def _arguments_model(function: Callable[..., Any]) -> type[pydantic.BaseModel]:
    """A pydantic model of `function`'s parameters (annotations and defaults; `*args`/`**kwargs` refused)."""
    hints = _type_hints(function)
    fields: dict[str, Any] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {function.__name__}: *args and **kwargs cannot be described as arguments")
        annotation = hints.get(name, Any)
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[name] = (annotation, default)
    config = pydantic.ConfigDict(extra="forbid")
    return pydantic.create_model(f"{function.__name__}_arguments", __config__=config, **fields)


def _type_hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function, include_extras=True)
    except (NameError, TypeError) as exc:
        raise TypeError(f"tool {function.__name__}: its annotations cannot be resolved: {exc}") from None


@dataclass(frozen=True)
class ToolCall:
    """A call the model made: OpenAI's `id`, the tool's `name`, its validated `arguments` and the `tool`."""

    id: str | None
    name: str
    arguments: pydantic.BaseModel
    tool: Tool

    def __call__(self) -> Any:
        """Run the function with the arguments (a pydantic-model tool has nothing to run)."""
        if self.tool.function is None:
            raise TypeError(f"tool {self.name} is a pydantic model; its arguments are the value")
        return self.tool.function(**{name: getattr(self.arguments, name) for name in
                                     type(self.arguments).model_fields})


class ToolCalls(list[ToolCall]):
    """The calls of one reply, in order; `content` is its text outside calls (None if there is none)."""

    def __init__(self, calls: Sequence[ToolCall] = (), content: str | None = None):
        super().__init__(calls)
        self.content = content


@dataclass(frozen=True)
class ToolSet:
    """The tools of one request and the choice among them."""

    tools: tuple[Tool, ...]
    choice: str | Tool
    parallel: bool = True

    @classmethod
    def build(cls, tools: Sequence[Any], tool_choice: Any = "auto", parallel_tool_calls: bool = True) -> ToolSet:
        """Check `tools` and `tool_choice` (`auto`, `required`, `none`, or one of the tools, by name or object)."""
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence) or not tools:
            raise TypeError("tools must be a non-empty list of functions or pydantic model classes")
        built = tuple(as_tool(t) for t in tools)
        names = [t.name for t in built]
        if len(set(names)) != len(names):
            raise ValueError(f"two tools share a name: {names}")
        if tool_choice in TOOL_CHOICES:
            return cls(built, tool_choice, parallel_tool_calls)
        name = tool_choice if isinstance(tool_choice, str) else as_tool(tool_choice).name
        if name not in names:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools {names}")
        return cls(built, built[names.index(name)], parallel_tool_calls)

    def tools_request(self) -> ToolsRequest:
        """The server's view of these tools (for the in-process engine)."""
        tools = tuple(FunctionTool(t.name, t.description, t.arguments_model.model_json_schema(), True)
                      for t in self.tools)
        if isinstance(self.choice, Tool):
            return ToolsRequest(tools, "function", self.choice.name, self.parallel)
        return ToolsRequest(tools, self.choice, None, self.parallel)

    def request_fields(self) -> dict[str, Any]:
        """`tools`, `tool_choice` and `parallel_tool_calls` of an OpenAI chat request."""
        choice = self.choice if isinstance(self.choice, str) else \
            {"type": "function", "function": {"name": self.choice.name}}
        return {"tools": [t.to_openai() for t in self.tools], "tool_choice": choice,
                "parallel_tool_calls": self.parallel}

    def calls(self, raw_calls: Sequence[tuple[str | None, str, str]], content: str | None,
              finish_reason: str | None, max_tokens: int | None) -> ToolCalls:
        """Typed calls from (id, name, arguments JSON text) triples; a reply cut by the token limit raises
        `TruncatedOutputError`, arguments that do not fit their tool `OutputValidationError`."""
        if finish_reason == "length":
            raise TruncatedOutputError(content or "", max_tokens=max_tokens)
        return ToolCalls([self.call(*raw) for raw in raw_calls], content)

    def call(self, call_id: str | None, name: str, arguments: str) -> ToolCall:
        """One typed call; `OutputValidationError` if the tool is unknown or the arguments do not fit."""
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            raise OutputValidationError(f"the model called {name!r}, which is not among the tools", text=arguments)
        try:
            value = tool.arguments_model.model_validate(json.loads(arguments))
        except (json.JSONDecodeError, pydantic.ValidationError) as exc:
            raise OutputValidationError(f"the arguments of {name} do not fit its parameters: {exc}",
                                        text=arguments) from None
        return ToolCall(call_id, name, value, tool)


@dataclass
class StreamedCalls:
    """The typed calls of a streamed reply, read from OpenAI's deltas: `feed` returns the new content
    and each call as soon as its arguments are a whole JSON object (a server may send a call in one
    delta or in fragments; a closed object cannot grow into a longer one), `result` the `ToolCalls`."""

    tools: ToolSet
    content: list[str] = field(default_factory=list)
    _open: dict[int, list[Any]] = field(default_factory=dict)  # index -> [id, name, arguments]
    _done: list[ToolCall] = field(default_factory=list)

    def feed(self, delta: dict[str, Any]) -> list[str | ToolCall]:
        """The content piece (a str) and the calls completed by one delta, in order."""
        out: list[str | ToolCall] = []
        if delta.get("content"):
            self.content.append(delta["content"])
            out.append(delta["content"])
        for part in delta.get("tool_calls") or []:
            entry = self._open.setdefault(part["index"], [None, "", ""])
            function = part.get("function") or {}
            entry[0] = part.get("id") or entry[0]
            entry[1] += function.get("name") or ""
            entry[2] += function.get("arguments") or ""
            if _whole_object(entry[2]):
                del self._open[part["index"]]
                self._done.append(self.tools.call(*entry))
                out.append(self._done[-1])
        return out

    def result(self, finish_reason: str | None, max_tokens: int | None) -> ToolCalls:
        """The reply's calls; `TruncatedOutputError` at the token limit, `OutputValidationError` for a call
        whose arguments never became a whole object."""
        content = "".join(self.content) or None
        if finish_reason == "length":
            raise TruncatedOutputError(content or "", max_tokens=max_tokens)
        for call_id, name, arguments in self._open.values():
            self.tools.call(call_id, name, arguments)  # raises: not a whole object
        return ToolCalls(self._done, content)


def _whole_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False
