"""Tool-call formats: how a model writes a call, as its chat template teaches it.

Each format spells one call as `begin(name)`, the arguments (a JSON object) and `end`; `trigger` is
the string that opens a call in free text. `detect_format` reads the format off the chat template's
text (the markers it renders for assistant tool calls); a template that never mentions `tools`
cannot show the model its tools at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


class ToolFormatError(ValueError):
    """The chat template cannot carry tools, or its tool-call format is not one formwork knows."""


@dataclass(frozen=True)
class ToolCallFormat:
    """One call is `prefix + json(name) + middle + <arguments object> + end`; `prefix` starts with `trigger`."""

    name: str
    trigger: str
    prefix: str
    middle: str
    end: str
    markers: tuple[str, ...]  # strings whose presence in a chat template means this format

    def begin(self, function_name: str) -> str:
        return self.prefix + json.dumps(function_name, ensure_ascii=False) + self.middle


HERMES = ToolCallFormat("hermes", "<tool_call>", '<tool_call>\n{"name": ', ', "arguments": ', "}\n</tool_call>",
                        markers=("<tool_call>",))
MISTRAL = ToolCallFormat("mistral", "[TOOL_CALLS]", '[TOOL_CALLS] [{"name": ', ', "arguments": ', "}]",
                         markers=("[TOOL_CALLS]",))
LLAMA3_JSON = ToolCallFormat("llama3_json", '{"name": ', '{"name": ', ', "parameters": ', "}",
                             markers=("<|python_tag|>", "ipython"))
FORMATS = (HERMES, MISTRAL, LLAMA3_JSON)


def detect_format(chat_template: str | None) -> ToolCallFormat:
    """The tool-call format of a chat template; raises `ToolFormatError` if it has none."""
    if not chat_template or "tools" not in chat_template:
        raise ToolFormatError("the model's chat template does not render tools, so the model cannot be "
                              "given any")
    for fmt in FORMATS:
        if any(marker in chat_template for marker in fmt.markers):
            return fmt
    raise ToolFormatError("the model's chat template renders tools in a tool-call format formwork does not "
                          f"know (it knows {', '.join(f.name for f in FORMATS)})")
