"""The server's view of the engine: tokenization, chat rendering, constraint checks and request streams.

`PromptTools` is the engine-free half (what a replica router needs too); `EngineClient` adds one engine.

`EngineClient` wraps the core `AsyncLLMEngine` and turns its errors into API errors: an engine
refusal (bad prompt, duplicate id) is a 400, a full waiting queue a 503 with Retry-After, a dead
engine a 503, a request that fails inside the engine a 500.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from formwork.core.async_engine import AsyncLLMEngine, EngineDeadError, EngineOverloadedError
from formwork.core.config import EngineConfig
from formwork.core.engine import PromptTooLongError, RequestError
from formwork.core.events import RequestFailedError
from formwork.core.grammar_backend import GrammarBackend
from formwork.core.model_files import ChatTemplateError, ModelFiles
from formwork.core.outputs import RequestOutput
from formwork.core.sampling_params import SamplingParams
from formwork.grammar.budget import CompileBudget
from formwork.server.constraints import ConstraintValidator
from formwork.server.errors import (ContextLengthError, EngineUnavailableError, InternalError,
                                    InvalidRequestError, ServerOverloadedError)
from formwork.server.metrics import structured_output_metrics

_END = object()


class PromptTools:
    """The engine-free half of the server's view: tokenization, chat rendering, token bytes and
    constraint checks over one model's files and grammar backend (a replica router has these
    without an engine of its own)."""

    def __init__(self, files: ModelFiles, max_model_len: int, backend: GrammarBackend, compile_max_seconds: float):
        self.files = files
        self.tokenizer = files.tokenizer
        self.max_model_len = max_model_len
        self.vocab = backend.vocab
        self.compile_max_seconds = compile_max_seconds
        self.validator = ConstraintValidator(lambda spec, budget: backend.compile(spec, budget=budget))

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text).input_ids)

    def decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids)

    def render_chat(self, messages: list[dict[str, Any]],
                    tools: list[dict[str, Any]] | None = None) -> tuple[str, list[int]]:
        """The conversation (and the offered `tools`) rendered with the model's chat template, and its token ids."""
        try:
            text = self.files.apply_chat_template(messages, add_generation_prompt=True, tools=tools)
        except ChatTemplateError as exc:
            raise InvalidRequestError(str(exc), param="messages") from None
        return text, list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def token_bytes(self, token_id: int, text: str) -> bytes:
        """The exact bytes of a generated token (its text's UTF-8 for special tokens)."""
        raw = self.vocab.token_bytes[token_id] if 0 <= token_id < self.vocab.vocab_size else None
        return raw if raw is not None else text.encode()

    def constraint_budget(self) -> CompileBudget:
        """A fresh budget for one pre-admission check (cancel it to stop that compile)."""
        return CompileBudget(max_seconds=self.compile_max_seconds)

    def check_constraint(self, spec: dict[str, Any], param: str, budget: CompileBudget | None = None) -> list[str]:
        """The constraint's warnings, or an `InvalidConstraintError`; compiled under `budget`."""
        return self.validator.check(spec, param, budget or self.constraint_budget())


class EngineClient(PromptTools):
    """Everything the routes ask of the engine (an `AsyncLLMEngine`)."""

    def __init__(self, engine: AsyncLLMEngine):
        self.engine = engine
        core = engine.engine  # the LLMEngine: model files, tokenizer, limits
        self.structured_output = so = core.structured_output
        # the backend is built now (vocabulary, token trie), not on the first constrained request
        super().__init__(core.files, core.max_model_len, so.backend, so.compile_max_seconds)

    @classmethod
    def from_model(cls, model_dir: str | Path, **options: Any) -> "EngineClient":
        """Load a model directory; `options` are `EngineConfig` fields (None means the default)."""
        config = EngineConfig(**{k: v for k, v in options.items() if v is not None})
        return cls(AsyncLLMEngine(model_dir, config))

    # ---- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        self.engine.start()

    def shutdown(self) -> None:
        self.engine.shutdown()

    @property
    def is_healthy(self) -> bool:
        return self.engine.is_healthy

    def metrics_snapshot(self) -> dict[str, Any]:
        """The engine's metrics plus its structured-output (grammar compile and mask) statistics."""
        return {**self.engine.metrics_snapshot(), **structured_output_metrics(self.structured_output.stats),
                "formwork:constraint_check_seconds": self.validator.check_seconds.snapshot()}

    # ---- requests ---------------------------------------------------------------------------------

    def generate(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams, *,
                 prompt: str | None, priority: int) -> AsyncIterator[RequestOutput]:
        """Admit a request (raising an API error at once if refused) and iterate its cumulative outputs."""
        try:
            stream = self.engine.generate(request_id, prompt, params, prompt_token_ids=prompt_token_ids,
                                          priority=priority)
        except PromptTooLongError as exc:
            raise ContextLengthError(str(exc), param="messages") from None
        except RequestError as exc:
            raise InvalidRequestError(str(exc)) from None
        except EngineOverloadedError as exc:
            raise ServerOverloadedError(f"the server is overloaded: {exc}") from None
        except EngineDeadError as exc:
            raise EngineUnavailableError(str(exc)) from None
        return _api_failures(stream)

    def abort(self, request_ids: list[str]) -> None:
        """Cancel requests now (unknown or finished ids are ignored); frees their KV blocks."""
        self.engine.abort(request_ids)

    def describe(self) -> str:
        """One line for the startup log: the model, its limits and the KV pool."""
        cfg = self.files.hf_config
        core = self.engine.engine
        pool = core.block_manager
        return (f"{Path(self.files.path).name} ({cfg.model_type}, {cfg.num_hidden_layers} layers, hidden "
                f"{cfg.hidden_size}, {core.runner.dtype}), vocab {self.vocab.vocab_size}, max_model_len "
                f"{self.max_model_len}, KV pool {pool.num_blocks} blocks x {pool.block_size} tokens, "
                f"max_num_seqs {core.config.max_num_seqs}")


async def _api_failures(stream: AsyncIterator[RequestOutput]) -> AsyncIterator[RequestOutput]:
    """`stream` with a request failing inside the engine turned into a 500 API error."""
    try:
        async for output in stream:
            yield output
    except RequestFailedError as exc:
        raise InternalError(f"the request failed: {exc}", code="request_failed") from None


async def merge_streams(streams: list[AsyncIterator[RequestOutput]]) -> AsyncIterator[tuple[int, RequestOutput]]:
    """Interleave several request streams as `(stream_index, output)` in arrival order."""
    if len(streams) == 1:
        async for output in streams[0]:
            yield 0, output
        return
    queue: asyncio.Queue = asyncio.Queue()

    async def pump(index: int, stream: AsyncIterator[RequestOutput]) -> None:
        try:
            async for output in stream:
                await queue.put((index, output))
        except Exception as exc:  # handed to the consumer, which re-raises it
            await queue.put((index, exc))
        await queue.put((index, _END))

    tasks = [asyncio.ensure_future(pump(i, s)) for i, s in enumerate(streams)]
    try:
        remaining = len(tasks)
        while remaining:
            index, item = await queue.get()
            if item is _END:
                remaining -= 1
            elif isinstance(item, Exception):
                raise item
            else:
                yield index, item
    finally:
        for task in tasks:
            task.cancel()
