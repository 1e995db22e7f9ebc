"""Server-sent events: OpenAI chunk streams for chat and completions, and a disconnect-aware response.

Chunks are built from cumulative engine outputs (`(prompt_index, RequestOutput)` pairs); each choice
remembers how much text, how many tokens and logprobs it has sent, so a chunk carries only the new
part. Every event is `data: <json>\\n\\n`; the stream ends with `data: [DONE]\\n\\n`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from formwork.core.outputs import CompletionOutput, RequestOutput
from formwork.server.errors import APIError
from formwork.server.reasoning import ReasoningParser
from formwork.server.responses import (TokenBytes, chat_logprobs, completion_logprobs, finish_reason,
                                       usage)
from formwork.server.tools.calling import ToolCalling

DONE = "data: [DONE]\n\n"


def sse(payload: dict[str, Any]) -> str:
    return "data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n\n"


@dataclass
class ChoiceProgress:
    """What one choice has already sent."""

    text_chars: int = 0
    tokens: int = 0
    started: bool = False
    finished: bool = False


@dataclass
class StreamState:
    """Per-stream bookkeeping: progress per choice and the latest output per prompt."""

    n: int
    progress: dict[int, ChoiceProgress] = field(default_factory=dict)
    latest: dict[int, RequestOutput] = field(default_factory=dict)

    def choice(self, prompt_index: int, output: CompletionOutput) -> tuple[int, ChoiceProgress]:
        index = prompt_index * self.n + output.index
        return index, self.progress.setdefault(index, ChoiceProgress())


async def completion_chunks(updates: AsyncIterator[tuple[int, RequestOutput]], *, response_id: str,
                            created: int, model: str, n: int, logprobs: int | None, include_usage: bool,
                            echo_prompts: list[str] | None) -> AsyncIterator[str]:
    """`text_completion` chunks (one per choice update), the usage chunk if asked, then [DONE]."""
    state = StreamState(n)
    base = {"id": response_id, "object": "text_completion", "created": created, "model": model,
            "system_fingerprint": None}
    extra = {"usage": None} if include_usage else {}
    try:
        async for prompt_index, output in updates:
            state.latest[prompt_index] = output
            for completion in output.outputs:
                index, progress = state.choice(prompt_index, completion)
                if progress.finished:
                    continue
                prefix = echo_prompts[prompt_index] if echo_prompts and not progress.started else ""
                text = completion.text[progress.text_chars:]
                reason = finish_reason(completion)
                new_tokens = completion.token_ids[progress.tokens:]
                if not (text or prefix or reason or (logprobs is not None and new_tokens)):
                    continue
                lp = None
                if logprobs is not None and completion.logprobs is not None:
                    lp = completion_logprobs(new_tokens, completion.logprobs[progress.tokens:], logprobs,
                                             len(prefix) + progress.text_chars)
                progress.started, progress.finished = True, reason is not None
                progress.text_chars, progress.tokens = len(completion.text), len(completion.token_ids)
                choice = {"index": index, "text": prefix + text, "logprobs": lp, "finish_reason": reason,
                          "stop_reason": completion.stop_reason}
                yield sse({**base, "choices": [choice], **extra})
        if include_usage:
            yield sse({**base, "choices": [], "usage": usage(_ordered(state.latest))})
        yield DONE
    except APIError as exc:
        yield exc.to_sse()
        yield DONE


async def chat_chunks(updates: AsyncIterator[tuple[int, RequestOutput]], *, response_id: str, created: int,
                      model: str, n: int, top_logprobs: int | None, include_usage: bool,
                      token_bytes: TokenBytes, tool_calling: ToolCalling | None = None,
                      reasoning: ReasoningParser | None = None) -> AsyncIterator[str]:
    """`chat.completion.chunk`s: a role chunk per choice, content (or, with `tool_calling`, tool call)
    deltas (with `reasoning`, `reasoning_content` deltas of the thinking first), usage if asked, then [DONE]."""
    state = StreamState(n)
    thinking = reasoning.stream() if reasoning is not None else None
    tool_stream = tool_calling.stream() if tool_calling is not None else None
    base = {"id": response_id, "object": "chat.completion.chunk", "created": created, "model": model,
            "system_fingerprint": None}
    extra = {"usage": None} if include_usage else {}
    try:
        for index in range(n):
            state.progress[index] = ChoiceProgress(started=True)
            yield sse({**base, "choices": [{"index": index, "delta": {"role": "assistant", "content": ""},
                                            "logprobs": None, "finish_reason": None}], **extra})
        async for _, output in updates:
            state.latest[0] = output
            for completion in output.outputs:
                index, progress = state.choice(0, completion)
                if progress.finished:
                    continue
                text = completion.text[progress.text_chars:]
                reason = finish_reason(completion)
                new_tokens = completion.token_ids[progress.tokens:]
                if not (text or reason or (top_logprobs is not None and new_tokens)):
                    continue
                lp = None
                if top_logprobs is not None and completion.logprobs is not None:
                    lp = chat_logprobs(new_tokens, completion.logprobs[progress.tokens:], top_logprobs, token_bytes)
                progress.finished = reason is not None
                progress.text_chars, progress.tokens = len(completion.text), len(completion.token_ids)
                thought = ""
                if thinking is not None:
                    thought, text = thinking.split(index, text, final=reason is not None)
                    if not (thought or text or reason or lp is not None):
                        continue  # all of it may start a tag: held back
                deltas = [{"content": text} if text or not reason else {}]
                if tool_stream is not None:
                    deltas, reason = tool_stream.deltas(index, text, reason)
                    deltas = deltas or ([{}] if lp is not None else [])
                if thought:
                    deltas = [{"reasoning_content": thought}, *(d for d in deltas if d != {"content": ""})]
                for k, delta in enumerate(deltas):
                    last = k == len(deltas) - 1
                    yield sse({**base, "choices": [{"index": index, "delta": delta, "logprobs": lp if k == 0 else None,
                                                    "finish_reason": reason if last else None,
                                                    "stop_reason": completion.stop_reason if last else None}],
                               **extra})
        if include_usage:
            yield sse({**base, "choices": [], "usage": usage(_ordered(state.latest))})
        yield DONE
    except APIError as exc:
        yield exc.to_sse()
        yield DONE


def _ordered(latest: dict[int, RequestOutput]) -> list[RequestOutput]:
    return [latest[i] for i in sorted(latest)]


class EventStreamResponse(StreamingResponse):
    """A `text/event-stream` response that stops as soon as the client disconnects.

    It always races the body against the client's `http.disconnect` (whatever the ASGI spec
    version), then closes the body generator and calls `on_close`, which aborts any request still
    running in the engine, so KV blocks are freed at once."""

    def __init__(self, content: AsyncIterator[str], on_close: Callable[[], None]):
        super().__init__(content, media_type="text/event-stream",
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as group:
                async def stream() -> None:
                    await self.stream_response(send)
                    group.cancel_scope.cancel()

                async def watch() -> None:
                    await self.listen_for_disconnect(receive)
                    group.cancel_scope.cancel()

                group.start_soon(stream)
                group.start_soon(watch)
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()
                self.on_close()
