"""formwork.core: the inference engine.

`LLM` (offline batches), `LLMEngine` (one `step()` at a time), `AsyncLLMEngine` (background thread,
async streams for the server), `SamplingParams`, `EngineConfig` and the output types. Names are
imported on first use, so `import formwork.core` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "LLM": "formwork.core.llm",
    "LLMEngine": "formwork.core.engine",
    "AsyncLLMEngine": "formwork.core.async_engine",
    "EngineConfig": "formwork.core.config",
    "SamplingParams": "formwork.core.sampling_params",
    "SamplingParamsError": "formwork.core.sampling_params",
    "RequestOutputKind": "formwork.core.sampling_params",
    "RequestOutput": "formwork.core.outputs",
    "CompletionOutput": "formwork.core.outputs",
    "Logprob": "formwork.core.outputs",
    "RequestError": "formwork.core.engine",
    "EngineDeadError": "formwork.core.async_engine",
    "EngineOverloadedError": "formwork.core.async_engine",
    "StreamEvent": "formwork.core.events",
    "EventKind": "formwork.core.events",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'formwork.core' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
