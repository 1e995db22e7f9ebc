"""formwork: a structured-generation engine.

    import formwork
    llm = formwork.LLM()                                   # the embedded demo model
    ticket = llm.generate(messages, output_type=Ticket)    # a Ticket instance
    client = formwork.Client("http://127.0.0.1:8000")      # the same, over HTTP

Names load on first use, so `import formwork` stays cheap (the engine pulls in torch).
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "formwork.sdk": [
        "LLM", "Client", "AsyncClient", "Regex", "Choice", "JsonSchema", "PartialText", "output_format",
        "FormworkError", "UnsupportedOutputTypeError", "TruncatedOutputError", "OutputValidationError",
        "GenerationError", "APIError", "BadRequestError", "AuthenticationError", "NotFoundError",
        "RateLimitError", "ServiceUnavailableError", "InternalServerError", "APIConnectionError",
        "APITimeoutError", "Tool", "ToolCall", "ToolCalls",
    ],
    "formwork.core": ["SamplingParams", "EngineConfig", "LLMEngine", "AsyncLLMEngine", "RequestOutput",
                      "CompletionOutput"],
    "formwork.grammar": ["Vocabulary", "GrammarCompiler", "GrammarError", "allocate_token_bitmask",
                         "compile_json_schema", "compile_regex", "compile_choice", "compile_ebnf"],
    "formwork.schemas": ["load_schema", "SchemaError"],
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'formwork' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
