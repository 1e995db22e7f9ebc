"""Reading tool calls out of a completion as it grows: free text, then calls in the model's format.

`ToolCallParser.feed` takes each new piece of text and returns what can be told so far, as OpenAI
stream deltas: content (text outside calls; whitespace around calls is dropped) and whole calls.
A call is held until its end string closes it and then sent as one delta (id, type, function name
and its arguments: the JSON object exactly as the model wrote it), so nothing sent is ever taken
back: a call the completion ends inside (max_tokens) is no call, and `finish` sends its text as
content. Streaming and whole responses both use it, so they agree.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from formwork.server.tools.formats import ToolCallFormat

_WHITESPACE = " \t\r\n"


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass
class ParsedCall:
    """One call: OpenAI's id, the function name, its arguments text and whether its end string closed it."""

    id: str
    name: str
    arguments: str = ""
    complete: bool = False
    raw: str = ""  # everything the model wrote for this call, markers included

    def to_openai(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class JsonValueEnd:
    """Finds where one JSON object or array ends in text that arrives in pieces (strings and escapes
    are tracked, so brackets inside strings do not count)."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.done = False

    def feed(self, text: str) -> int:
        """How many characters of `text` still belong to the value (all of them until it closes)."""
        for i, ch in enumerate(text):
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
            elif ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth <= 0:
                    self.done = True
                    return i + 1
        return len(text)


@dataclass
class ToolCallParser:
    """Incremental split of one completion into content and calls of the functions `names`."""

    fmt: ToolCallFormat
    names: list[str]
    calls: list[ParsedCall] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    _buffer: str = ""
    _space: str = ""  # whitespace between text and a trigger
    _state: str = "text"  # text -> header -> arguments -> end -> text ...
    _value: JsonValueEnd = field(default_factory=JsonValueEnd)

    def __post_init__(self) -> None:
        self._begins = {self.fmt.begin(name): name for name in self.names}

    def feed(self, text: str) -> list[dict[str, Any]]:
        """Stream deltas (`{"content": ...}` or `{"tool_calls": [...]}`) for the new `text`."""
        self._buffer += text
        deltas: list[dict[str, Any]] = []
        progressing = True
        while progressing:
            progressing = self._step(deltas)
        return deltas

    def finish(self) -> list[dict[str, Any]]:
        """Deltas for whatever was held back once the completion has ended."""
        deltas: list[dict[str, Any]] = []
        if self._state in ("text", "header"):
            self._content(self._buffer.rstrip(_WHITESPACE) if self._state == "text" else self._space + self._buffer,
                          deltas)
        else:
            self.calls[-1].raw += self._buffer
            self._content(self.calls[-1].raw, deltas)  # the call never closed: its text is content
        self._buffer = ""
        return deltas

    # ---- states -----------------------------------------------------------------------------------

    def _step(self, deltas: list[dict[str, Any]]) -> bool:
        """Advance through the buffer; False once more text is needed."""
        return getattr(self, f"_in_{self._state}")(deltas)

    def _in_text(self, deltas: list[dict[str, Any]]) -> bool:
        trigger, buffer = self.fmt.trigger, self._buffer
        at = buffer.find(trigger)
        if at >= 0:
            text = buffer[:at].rstrip(_WHITESPACE)
            self._content(text, deltas)
            self._space = buffer[len(text):at]  # dropped if a call follows, text if not
            self._buffer, self._state = buffer[at:], "header"
            return True
        held = next((k for k in range(min(len(trigger) - 1, len(buffer)), 0, -1)
                     if trigger.startswith(buffer[-k:])), 0)
        ready = buffer[:len(buffer) - held]
        text = ready.rstrip(_WHITESPACE)
        self._content(text, deltas)
        self._buffer = ready[len(text):] + buffer[len(ready):]
        return False

    def _in_header(self, deltas: list[dict[str, Any]]) -> bool:
        for begin, name in self._begins.items():
            if self._buffer.startswith(begin):
                self.calls.append(ParsedCall(new_call_id(), name, raw=begin))
                self._buffer, self._state, self._value = self._buffer[len(begin):], "arguments", JsonValueEnd()
                return True
        if any(begin.startswith(self._buffer) for begin in self._begins):
            return False
        # Not a call after all (only possible without a constraint): the trigger is plain text.
        trigger = self.fmt.trigger
        self._content(self._space + trigger, deltas)
        self._buffer, self._state = self._buffer[len(trigger):], "text"
        return True

    def _in_arguments(self, deltas: list[dict[str, Any]]) -> bool:
        taken = self._value.feed(self._buffer)
        piece, self._buffer = self._buffer[:taken], self._buffer[taken:]
        call = self.calls[-1]
        call.arguments += piece
        call.raw += piece
        if not self._value.done:
            return False
        self._state = "end"
        return True

    def _in_end(self, deltas: list[dict[str, Any]]) -> bool:
        end, call = self.fmt.end, self.calls[-1]
        rest = self._buffer.lstrip(_WHITESPACE)
        if rest.startswith(end):
            call.raw += self._buffer[:len(self._buffer) - len(rest) + len(end)]
            self._buffer = rest[len(end):]
            self._close(deltas)
            return True
        if end.startswith(rest):
            return False
        self._close(deltas)  # the object closed but no end string follows: take the rest as text
        return True

    def _close(self, deltas: list[dict[str, Any]]) -> None:
        """The open call is complete: send all of it."""
        call = self.calls[-1]
        call.complete, self._state = True, "text"
        deltas.append({"tool_calls": [{"index": len(self.calls) - 1, **call.to_openai()}]})

    def _content(self, text: str, deltas: list[dict[str, Any]]) -> None:
        if not text:
            return
        self.content.append(text)
        if deltas and "content" in deltas[-1]:
            deltas[-1]["content"] += text
        else:
            deltas.append({"content": text})


def parse_completion(fmt: ToolCallFormat, names: list[str], text: str) -> ToolCallParser:
    """A parser that has read all of `text` (its `content` and `calls`, the last one maybe unfinished)."""
    parser = ToolCallParser(fmt, names)
    parser.feed(text)
    parser.finish()
    return parser
