"""OpenAI response bodies built from engine outputs: completions, chat completions, usage, logprobs.

Chat and completions report logprobs differently (as OpenAI does): chat gives
`{"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}`, completions give
`{"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from formwork.core.outputs import CompletionOutput, Logprob, RequestOutput
from formwork.server.reasoning import ReasoningParser
from formwork.server.tools.calling import ToolCalling

# JSON has no -inf; like vLLM, clamp log-probabilities of impossible tokens.
MIN_LOGPROB = -9999.0
# OpenAI finish reasons; the engine's `abort`/`error` never reach a successful response.
FINISH_REASONS = {"stop": "stop", "length": "length"}

TokenBytes = Callable[[int, str], bytes]


def clamp(logprob: float) -> float:
    return max(logprob, MIN_LOGPROB)


def finish_reason(output: CompletionOutput) -> str | None:
    return FINISH_REASONS.get(output.finish_reason) if output.finish_reason else None


def usage(outputs: list[RequestOutput]) -> dict[str, Any]:
    """Usage over every prompt of a request: prompt tokens, generated tokens of all choices."""
    prompt = sum(len(o.prompt_token_ids) for o in outputs)
    completion = sum(len(c.token_ids) for o in outputs for c in o.outputs)
    cached = sum(o.num_cached_tokens for o in outputs)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def _ranked(entry: dict[int, Logprob], top_n: int) -> list[tuple[int, Logprob]]:
    """The top `top_n` alternatives of one position, most likely first."""
    ranked = sorted(entry.items(), key=lambda kv: (kv[1].rank if kv[1].rank is not None else 1 << 30,
                                                   -kv[1].logprob))
    return [(tid, lp) for tid, lp in ranked if lp.rank is None or lp.rank <= top_n][:top_n]


def _token_text(lp: Logprob) -> str:
    return lp.decoded_token if lp.decoded_token is not None else ""


def chat_logprobs(token_ids: list[int], entries: list[dict[int, Logprob]], top_n: int,
                  token_bytes: TokenBytes) -> dict[str, Any]:
    """`choices[].logprobs` of a chat completion for the given generated tokens."""
    content = []
    for token_id, entry in zip(token_ids, entries):
        sampled = entry[token_id]
        text = _token_text(sampled)
        content.append({
            "token": text, "logprob": clamp(sampled.logprob), "bytes": list(token_bytes(token_id, text)),
            "top_logprobs": [{"token": _token_text(lp), "logprob": clamp(lp.logprob),
                              "bytes": list(token_bytes(tid, _token_text(lp)))}
                             for tid, lp in _ranked(entry, top_n)],
        })
    return {"content": content, "refusal": None}


def completion_logprobs(token_ids: list[int], entries: list[dict[int, Logprob]], top_n: int,
                        text_offset: int) -> dict[str, Any]:
    """`choices[].logprobs` of a text completion; offsets count characters from `text_offset`."""
    tokens, token_logprobs, top, offsets = [], [], [], []
    for token_id, entry in zip(token_ids, entries):
        sampled = entry[token_id]
        text = _token_text(sampled)
        tokens.append(text)
        token_logprobs.append(clamp(sampled.logprob))
        top.append({_token_text(lp): clamp(lp.logprob) for _, lp in _ranked(entry, top_n)} if top_n else None)
        offsets.append(text_offset)
        text_offset += len(text)
    return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top, "text_offset": offsets}


def completion_choice(index: int, output: CompletionOutput, *, prefix: str, logprobs: int | None) -> dict:
    lp = None
    if logprobs is not None and output.logprobs is not None:
        lp = completion_logprobs(output.token_ids, output.logprobs, logprobs, len(prefix))
    return {"index": index, "text": prefix + output.text, "logprobs": lp,
            "finish_reason": finish_reason(output), "stop_reason": output.stop_reason}


def chat_choice(output: CompletionOutput, *, top_logprobs: int | None, token_bytes: TokenBytes,
                tool_calling: ToolCalling | None = None, reasoning: ReasoningParser | None = None) -> dict:
    """One chat choice; with `reasoning` the thinking goes to `reasoning_content`, with `tool_calling`
    the rest is read for tool calls."""
    lp = None
    if top_logprobs is not None and output.logprobs is not None:
        lp = chat_logprobs(output.token_ids, output.logprobs, top_logprobs, token_bytes)
    message = {"role": "assistant", "content": output.text, "refusal": None, "tool_calls": []}
    if reasoning is not None:
        message["reasoning_content"], message["content"] = reasoning.split(output.text)
    reason = finish_reason(output)
    if tool_calling is not None:
        parts, reason = tool_calling.message(message["content"] or "", reason)
        message.update(parts)
    return {"index": output.index, "message": message, "logprobs": lp, "finish_reason": reason,
            "stop_reason": output.stop_reason}


def completion_body(response_id: str, created: int, model: str, choices: list[dict],
                    outputs: list[RequestOutput]) -> dict[str, Any]:
    return {"id": response_id, "object": "text_completion", "created": created, "model": model,
            "system_fingerprint": None, "choices": choices, "usage": usage(outputs)}


def chat_body(response_id: str, created: int, model: str, choices: list[dict],
              outputs: list[RequestOutput]) -> dict[str, Any]:
    return {"id": response_id, "object": "chat.completion", "created": created, "model": model,
            "system_fingerprint": None, "choices": choices, "usage": usage(outputs)}
