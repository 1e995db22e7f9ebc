"""Tool calls and tool results in the conversation, shaped for Hugging Face chat templates.

An assistant message's `tool_calls` keep OpenAI's shape, with `arguments` decoded from the JSON
text OpenAI sends into an object (what templates write with `tojson`); a `tool` message keeps its
`tool_call_id` and gets the `name` of the function it answers when an earlier call says it.
"""

from __future__ import annotations

import json
from typing import Any

from formwork.server.errors import InvalidRequestError, InvalidTypeError, MissingFieldError


def tool_message_fields(message: dict[str, Any], param: str, names_by_id: dict[str, str]) -> dict[str, Any]:
    """The template fields of `message` beyond role and content (`names_by_id` maps the ids of calls
    seen so far to their function names, and is updated)."""
    role = message.get("role")
    if role == "assistant" and message.get("tool_calls") is not None:
        return {"tool_calls": _tool_calls(message["tool_calls"], f"{param}.tool_calls", names_by_id)}
    if role != "tool":
        return {}
    call_id = message.get("tool_call_id")
    if call_id is None:
        raise MissingFieldError(f"'{param}.tool_call_id' is a required property", param=f"{param}.tool_call_id")
    if not isinstance(call_id, str):
        raise InvalidTypeError(f"'{param}.tool_call_id' must be a string", param=f"{param}.tool_call_id")
    fields: dict[str, Any] = {"tool_call_id": call_id}
    if call_id in names_by_id:
        fields["name"] = names_by_id[call_id]
    return fields


def _tool_calls(calls: Any, param: str, names_by_id: dict[str, str]) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise InvalidTypeError(f"'{param}' must be an array", param=param)
    out = []
    for j, call in enumerate(calls):
        where = f"{param}.{j}"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise InvalidTypeError(f"'{where}' must be an object with a 'function' object", param=f"{where}.function")
        name, arguments = function.get("name"), function.get("arguments")
        if not isinstance(name, str):
            raise InvalidTypeError(f"'{where}.function.name' must be a string", param=f"{where}.function.name")
        if not isinstance(arguments, str):
            raise InvalidTypeError(f"'{where}.function.arguments' must be a string of JSON",
                                   param=f"{where}.function.arguments")
        try:
            decoded = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"'{where}.function.arguments' is not valid JSON: {exc}",
                                      param=f"{where}.function.arguments") from None
        entry: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": decoded}}
        if isinstance(call.get("id"), str):
            entry["id"] = call["id"]
            names_by_id[call["id"]] = name
        out.append(entry)
    return out
