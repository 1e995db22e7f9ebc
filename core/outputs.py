"""Result objects in vLLM's shape: RequestOutput holding one CompletionOutput per sample."""

from __future__ import annotations

from dataclasses import dataclass

from formwork.core.metrics import RequestMetrics


@dataclass(slots=True)
class Logprob:
    """Log-probability of one token, its rank among all tokens (1 = most likely) and its text."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


# Per generated token: candidate token id -> Logprob (the sampled token plus the top-N).
SampleLogprobs = list[dict[int, Logprob]]


@dataclass(slots=True)
class CompletionOutput:
    """One completion of a request. `finish_reason` is None while it is still being generated;
    `stop_reason` is the stop string or stop token id that ended it (None for EOS or length)."""

    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None
    logprobs: SampleLogprobs | None
    finish_reason: str | None = None
    stop_reason: int | str | None = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass(slots=True)
class RequestOutput:
    """The state of a request: cumulative outputs so far, or the final result when `finished`.
    `error` is set (and every completion has finish_reason `error`) when the request failed alone."""

    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool
    metrics: RequestMetrics | None = None
    error: str | None = None
    num_cached_tokens: int = 0
