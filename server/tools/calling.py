"""Tool calls in responses: the assistant message of a finished choice and the stream deltas of a
growing one, both read by `ToolCallParser` in the model's format.

A choice that ends with calls (and stopped on its own) has `finish_reason: "tool_calls"`; one that
ran out of tokens keeps `length`. A call cut short is never returned as a call, in a whole response
or a stream (which sends a call only once it has closed): its text stays in `content`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from formwork.server.tools.formats import ToolCallFormat
from formwork.server.tools.parser import ToolCallParser, parse_completion


@dataclass(frozen=True)
class ToolCalling:
    """Calls of `names` are read from the replies of a request in format `fmt`."""

    fmt: ToolCallFormat
    names: tuple[str, ...]

    def parser(self) -> ToolCallParser:
        return ToolCallParser(self.fmt, list(self.names))

    def message(self, text: str, reason: str | None) -> tuple[dict[str, Any], str | None]:
        """The assistant message of a finished reply (`content`, `tool_calls`) and its finish reason."""
        parser = parse_completion(self.fmt, list(self.names), text)
        calls = [call for call in parser.calls if call.complete]
        content = "".join(parser.content)
        return ({"content": content or None, "tool_calls": [c.to_openai() for c in calls]},
                _finish_reason(reason, bool(calls)))

    def stream(self) -> "ToolCallStream":
        return ToolCallStream(self)


@dataclass
class ToolCallStream:
    """The parsers of one streamed response, one per choice."""

    calling: ToolCalling
    parsers: dict[int, ToolCallParser] = field(default_factory=dict)

    def deltas(self, index: int, text: str, reason: str | None) -> tuple[list[dict[str, Any]], str | None]:
        """Deltas of choice `index` for its new `text`; once it has finished (`reason`), the rest and an
        empty closing delta, with the finish reason to send."""
        parser = self.parsers.setdefault(index, self.calling.parser())
        deltas = parser.feed(text)
        if reason is None:
            return deltas, None
        deltas += parser.finish() + [{}]
        return deltas, _finish_reason(reason, any(call.complete for call in parser.calls))


def _finish_reason(reason: str | None, called: bool) -> str | None:
    return "tool_calls" if reason == "stop" and called else reason
