"""Requests and their sequences: the units the scheduler moves between waiting and running."""

from __future__ import annotations

import enum
import itertools
from typing import TYPE_CHECKING

from formwork.core.detokenizer import IncrementalDetokenizer
from formwork.core.metrics import RequestMetrics
from formwork.core.outputs import SampleLogprobs
from formwork.core.sampling_params import SamplingParams

if TYPE_CHECKING:
    from formwork.core.structured_output import StructuredOutputRequest
    from formwork.grammar import Matcher


class SequenceStatus(enum.Enum):
    WAITING = "waiting"
    WAITING_FOR_GRAMMAR = "waiting_for_grammar"  # the scheduler skips it until its grammar is ready
    RUNNING = "running"
    FINISHED_STOPPED = "stop"
    FINISHED_LENGTH = "length"
    FINISHED_ABORTED = "abort"
    FINISHED_ERROR = "error"

    @property
    def is_finished(self) -> bool:
        return self._value_ in _FINISHED

    @property
    def finish_reason(self) -> str | None:
        """OpenAI/vLLM finish reason (`stop`, `length`, `abort`, `error`), None while unfinished."""
        return self.value if self.is_finished else None


_FINISHED = {status.value for status in (SequenceStatus.FINISHED_STOPPED, SequenceStatus.FINISHED_LENGTH,
                                          SequenceStatus.FINISHED_ABORTED, SequenceStatus.FINISHED_ERROR)}

_seq_ids = itertools.count()


class Sequence:
    """One completion being generated: its tokens, KV blocks and progress.

    `token_ids` is the prompt followed by the generated tokens; `num_computed_tokens` of them have
    their K/V in the cache. After preemption by recompute the blocks are gone and
    `num_computed_tokens` is 0, so the next prefill covers prompt and generated tokens alike.
    """

    def __init__(self, request: "Request", index: int, seed: int):
        self.seq_id = next(_seq_ids)
        self.request = request
        self.index = index
        self.seed = seed
        self.token_ids: list[int] = list(request.prompt_token_ids)
        self.num_prompt_tokens = len(self.token_ids)
        self.num_computed_tokens = 0
        self.block_table: list[int] = []
        self.block_hashes: list[bytes] = []  # chained hashes of the full blocks of token_ids
        self.num_hashed_blocks = 0          # leading blocks of block_table registered in the prefix cache
        self.status = SequenceStatus.WAITING
        self.num_preemptions = 0
        self.cumulative_logprob = 0.0
        self.last_token_logprob = 0.0
        self.logprobs: SampleLogprobs | None = [] if request.params.logprobs is not None else None
        self.output_text = ""
        self.stop_reason: int | str | None = None
        self.detokenizer: IncrementalDetokenizer | None = None  # set by the engine
        self.matcher: Matcher | None = None  # its request's constraint, once compiled (StructuredOutputManager)
        params = request.params
        # what the sampler reads every step: (temperature, top_k (0: off; at most int32's maximum), top_p,
        # min_p), and whether penalties, logit bias or min_tokens change the logits first
        self.sampling_row = (params.temperature, min(max(params.top_k, 0), 2**31 - 1), params.top_p, params.min_p)
        self.adjusts_logits = bool(params.logit_bias) or params.min_tokens > 0 or params.needs_penalties
        # handed out in DELTA outputs so far (see formwork.core.output_builder)
        self.num_sent_tokens = self.num_sent_chars = self.num_sent_logprobs = 0
        # the short path of a new token (set by `NewTokens.prepare`): tokens that may end the sequence, the
        # length that ends it, whether it needs no other check, and whether its text waits until read
        self.stop_ids: frozenset[int] = frozenset()
        self.length_limit = 0
        self.plain = self.plain_constrained = self.defers_text = False
        self.text_from = self.text_lag = 0  # token_ids[text_from:text_from + text_lag] wait for the detokenizer
        # async scheduling: the last token is a placeholder that ends the sequence once read (its length
        # limit), so the scheduler does not run it again
        self.final_token_pending = False

    @property
    def request_id(self) -> str:
        return self.request.request_id

    @property
    def params(self) -> SamplingParams:
        return self.request.params

    @property
    def priority(self) -> int:
        return self.request.priority

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    @property
    def sort_key(self) -> tuple[int, float, int]:
        """Scheduling order: lower priority value first, then arrival (FCFS), then creation."""
        return (self.request.priority, self.request.arrival_time, self.seq_id)

    def append_token(self, token_id: int, logprob: float) -> None:
        self.token_ids.append(token_id)
        self.last_token_logprob = logprob
        self.cumulative_logprob += logprob

    def __repr__(self) -> str:
        return (f"Sequence(id={self.seq_id}, request={self.request_id!r}, index={self.index}, "
                f"status={self.status.name}, tokens={self.num_tokens}, computed={self.num_computed_tokens})")


class Request:
    """A user request: a prompt, its sampling parameters and `params.n` sequences."""

    def __init__(self, request_id: str, prompt: str | None, prompt_token_ids: list[int],
                 params: SamplingParams, *, arrival_time: float, priority: int = 0,
                 seeds: list[int] | None = None):
        self.request_id = request_id
        self.prompt = prompt
        self.prompt_token_ids = list(prompt_token_ids)
        self.params = params
        self.priority = priority
        self.arrival_time = arrival_time
        self.metrics = RequestMetrics(arrival_time=arrival_time, num_prompt_tokens=len(prompt_token_ids))
        self.error: str | None = None
        self.structured_output: StructuredOutputRequest | None = None  # set by the StructuredOutputManager
        seeds = seeds if seeds is not None else [0] * params.n
        self.seqs = [Sequence(self, i, seeds[i]) for i in range(params.n)]

    @property
    def is_finished(self) -> bool:
        for seq in self.seqs:
            if seq.status._value_ not in _FINISHED:
                return False
        return True

    def __repr__(self) -> str:
        return f"Request(id={self.request_id!r}, prompt_tokens={len(self.prompt_token_ids)}, n={len(self.seqs)})"
