"""The typed SDK: ask for a type, get an instance of it back.

- `llm`: `LLM`, the in-process engine with typed outputs;
- `client`: `Client`/`AsyncClient` for any OpenAI-compatible server;
- `output_types`: how a Python type, `Regex`, `Choice` or `JsonSchema` becomes a constraint and a value;
- `tools`: functions and pydantic models as tools, typed calls back (`ToolCall`, `ToolCalls`);
- `errors`: the SDK's exceptions; `generate_cmd`: the `formwork generate` command.
"""
from __future__ import annotations

from formwork.sdk.client import AsyncClient, Client
from formwork.sdk.errors import (APIConnectionError, APIError, APITimeoutError, AuthenticationError,
                                 BadRequestError, FormworkError, GenerationError, InternalServerError,
                                 NotFoundError, OutputValidationError, PermissionDeniedError, RateLimitError,
                                 ServiceUnavailableError, TruncatedOutputError, UnsupportedOutputTypeError)
from formwork.sdk.llm import LLM
from formwork.sdk.output_types import Choice, JsonSchema, OutputFormat, PartialText, Regex, output_format
from formwork.sdk.tools import Tool, ToolCall, ToolCalls, as_tool

__all__ = [
    "APIConnectionError", "APIError", "APITimeoutError", "AsyncClient", "AuthenticationError",
    "BadRequestError", "Choice", "Client", "FormworkError", "GenerationError", "InternalServerError", "JsonSchema",
    "LLM", "NotFoundError", "OutputFormat", "OutputValidationError", "PartialText", "PermissionDeniedError",
    "RateLimitError", "Regex", "ServiceUnavailableError", "Tool", "ToolCall", "ToolCalls", "TruncatedOutputError",
    "UnsupportedOutputTypeError", "as_tool", "output_format",
]
