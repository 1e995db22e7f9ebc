"""OpenAI tool calling: the request's tool fields and their constraint (`request`), the model's call
format read off its chat template (`formats`), calls read out of the completion (`parser`) and
tool turns of the conversation (`messages`)."""

from formwork.server.tools.formats import (FORMATS, HERMES, LLAMA3_JSON, MISTRAL, ToolCallFormat, ToolFormatError,
                                           detect_format)
from formwork.server.tools.messages import tool_message_fields
from formwork.server.tools.parser import ParsedCall, ToolCallParser, parse_completion
from formwork.server.tools.request import FunctionTool, ToolsRequest, parse_tools

__all__ = [
    "FORMATS", "HERMES", "LLAMA3_JSON", "MISTRAL", "FunctionTool", "ParsedCall", "ToolCallFormat", "ToolCallParser",
    "ToolFormatError", "ToolsRequest", "detect_format", "parse_completion", "parse_tools", "tool_message_fields",
]
