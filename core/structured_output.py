"""StructuredOutputManager: the engine side of constrained decoding.

- Compiling: a request with `SamplingParams.structured_outputs` is compiled by a small pool of
  workers (`compile_queue.py`: no compile waits behind another's; the grammar backend caches compiled
  grammars by canonical spec and tokenizer); its sequences wait in WAITING_FOR_GRAMMAR, which the
  scheduler skips, so other requests keep running. A compile error or a budget overrun fails that
  request alone (`update_ready` reports it); removing a request cancels its compile.
- Masks: each step fills one bitmask row per sampled sequence (`start_fill` before the forward, the
  result taken before sampling; with `overlap` the fill runs on a thread while the forward runs).
  Unconstrained rows are all ones and are not listed in `MaskBatch.rows`.
- Advancing: sampled tokens are accepted by the sequence's matcher; `is_complete` says the document
  is finished (a stop token was accepted, or nothing but a stop token may follow); `jump_forward`
  accepts and returns the safe tokens of a forced continuation.

Each sequence of a request (n > 1) has its own matcher. Matchers survive preemption by recompute: the
generated tokens are kept, so the matcher state stays valid and decoding resumes where it was.
Extra stop tokens of a request (`stop_token_ids` that are not the model's EOS) are treated like EOS
by the mask: allowed only where the grammar can end.

End conditions (applied by the engine): EOS / stop tokens are sampled only where the grammar can end;
a complete document finishes with `stop` even with `ignore_eos` or before `min_tokens` (nothing else
may follow); `max_tokens` reached mid-document finishes with `length`, never `stop`. Stop strings
still apply to constrained requests, as in vLLM: the text is cut at the stop string and the request
finishes with `stop` and `stop_reason` set to that string, so such an output can be an incomplete
document (check `stop_reason`). Jump-forward is off for requests that ask for logprobs (forced
tokens have no sampled distribution to report).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from formwork.core.compile_queue import DEFAULT_WORKERS, CompileJob, CompileQueue
from formwork.core.gc_policy import freeze_process_tables
from formwork.core.grammar_backend import GrammarBackend, get_backend
from formwork.core.metrics import LATENCY_BUCKETS, MASK_BUCKETS, Histogram
from formwork.core.sequence import Request, Sequence, SequenceStatus
from formwork.grammar import CompileBudget, CompiledGrammar, GrammarError, Matcher, allocate_token_bitmask


class GrammarViolationError(RuntimeError):
    """A token reached a matcher that does not accept it (a mask/sampler inconsistency)."""


@dataclass
class StructuredOutputStats:
    """Counters for metrics and benchmarks."""

    num_compiled: int = 0
    # per request, worker time; a cumulative histogram so a long-running server's memory stays bounded
    compile_seconds: Histogram = field(default_factory=lambda: Histogram(LATENCY_BUCKETS))
    num_mask_steps: int = 0          # steps with at least one constrained row
    num_mask_rows: int = 0
    mask_seconds: float = 0.0        # total time spent filling masks
    mask_step_seconds: Histogram = field(default_factory=lambda: Histogram(MASK_BUCKETS))  # each step's
    num_jump_forward_tokens: int = 0
    num_jumps: int = 0


@dataclass
class MaskBatch:
    """The bitmask of one step: row i belongs to the i-th sampled sequence; `rows` are constrained."""

    bitmask: torch.Tensor
    rows: list[int]
    errors: dict[int, str]  # seq_id -> why its mask could not be computed (the request fails)


class StructuredOutputRequest:
    """The constraint state of one request: its compile job and grammar (each sequence holds its own matcher,
    `Sequence.matcher`)."""

    def __init__(self, spec: dict[str, Any], job: CompileJob, enable_jump_forward: bool):
        self.spec = spec
        self.job = job
        self.future = job.future
        self.grammar: CompiledGrammar | None = None
        self.extra_stop_ids: frozenset[int] = frozenset()
        self.enable_jump_forward = enable_jump_forward


class StructuredOutputManager:
    """Compiles constraints off the engine thread and drives per-sequence matchers."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_token_ids: list[int], *, max_num_seqs: int,
                 enable_jump_forward: bool = True, overlap: bool = False,
                 compile_max_seconds: float = 10.0, step_max_seconds: float = 5.0,
                 compile_workers: int = DEFAULT_WORKERS, pin_bitmask: bool = False):
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.eos_token_ids = list(eos_token_ids)
        self.max_num_seqs = max_num_seqs
        self.enable_jump_forward = enable_jump_forward
        self.compile_max_seconds = compile_max_seconds
        self.step_max_seconds = step_max_seconds
        self.stats = StructuredOutputStats()
        self._compiles = CompileQueue(self._compile, compile_max_seconds, compile_workers)
        self._fill_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="formwork-mask") if overlap else None
        self._backend: GrammarBackend | None = None
        self._backend_lock = threading.Lock()
        self._pending: dict[str, Request] = {}
        self._bitmask: torch.Tensor | None = None
        self._pin_bitmask = pin_bitmask  # page-locked, so the copy to the GPU holds neither host nor stream
        self._bitmask_np: np.ndarray | None = None

    # ---- compiling ------------------------------------------------------------------------------

    @property
    def backend(self) -> GrammarBackend:
        """The grammar backend (vocabulary, compiler) of this engine's tokenizer, built on first use."""
        with self._backend_lock:
            if self._backend is None:
                self._backend = get_backend(self.tokenizer, self.vocab_size, self.eos_token_ids)
                freeze_process_tables()
            return self._backend

    def add_request(self, request: Request) -> None:
        """Start compiling `request`'s constraint (if it has one) and hold its sequences back meanwhile."""
        spec = request.params.structured_outputs
        if spec is None:
            return
        if request.params.reasoning:  # free thinking first (see GrammarBackend.compile)
            spec = {**spec, "reasoning": True}
        job = self._compiles.submit(spec)
        jump = self.enable_jump_forward and request.params.logprobs is None
        request.structured_output = StructuredOutputRequest(spec, job, jump)
        for seq in request.seqs:
            seq.status = SequenceStatus.WAITING_FOR_GRAMMAR
        self._pending[request.request_id] = request

    def _compile(self, spec: dict[str, Any], budget: CompileBudget) -> CompiledGrammar:
        start = time.perf_counter()
        grammar = self.backend.compile(spec, budget=budget)
        self.stats.compile_seconds.observe(time.perf_counter() - start)
        return grammar

    def compile_status(self) -> dict[str, Any]:
        """The compile queue for `/health` (see `CompileQueue.status`): queued and running compiles,
        the check compiles of the server included, and whether any compile can still progress."""
        with self._backend_lock:
            backend = self._backend
        return self._compiles.status(backend.running() if backend is not None else ())

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    def wait_for_grammars(self, timeout: float) -> None:
        """Block until some pending compilation finishes (or `timeout` seconds pass)."""
        futures = [r.structured_output.future for r in self._pending.values()]
        if futures:
            wait(futures, timeout=timeout, return_when=FIRST_COMPLETED)

    def update_ready(self) -> list[tuple[Request, str]]:
        """Release the requests whose grammar is ready (their sequences become WAITING); returns the
        requests whose compilation failed, with the error to report."""
        failed = []
        for request_id, request in list(self._pending.items()):
            so: StructuredOutputRequest = request.structured_output
            if not so.future.done():
                continue
            del self._pending[request_id]
            if request.is_finished:
                continue
            try:
                so.grammar = so.future.result()
            except GrammarError as exc:
                failed.append((request, f"{type(exc).__name__}: the structured output constraint cannot be "
                                        f"compiled: {exc}"))
                continue
            except Exception as exc:  # an unexpected compiler bug fails this request only
                failed.append((request, f"{type(exc).__name__}: compiling the constraint failed: {exc}"))
                continue
            self.stats.num_compiled += 1
            stops = set(self.backend.vocab.stop_token_ids)
            so.extra_stop_ids = frozenset(t for t in request.params.stop_token_ids
                                          if t not in stops and t < self.vocab_size)
            for seq in request.seqs:
                seq.matcher = so.grammar.matcher(max_step_seconds=self.step_max_seconds)
                if seq.status is SequenceStatus.WAITING_FOR_GRAMMAR:
                    seq.status = SequenceStatus.WAITING
        return failed

    def remove(self, request: Request) -> None:
        """Forget a finished request; its pending compile is cancelled (dropped if it has not
        started, else stopped at its next budget check)."""
        if self._pending.pop(request.request_id, None) is not None:
            request.structured_output.job.cancel()

    # ---- masks ----------------------------------------------------------------------------------

    def start_fill(self, seqs: list[Sequence]) -> Callable[[], MaskBatch | None]:
        """Begin filling the masks of the sampled `seqs`; call the result before sampling. With
        `overlap`, the fill runs on a thread; without, it runs when the result is called, which the
        engine does after launching the forward (on a GPU the fill then overlaps the forward)."""
        if not any(seq.matcher is not None and not seq.status.is_finished for seq in seqs):
            return lambda: None
        if self._fill_executor is None:
            return lambda: self.fill_bitmask(seqs)
        future = self._fill_executor.submit(self.fill_bitmask, seqs)
        return future.result

    def bitmask_buffer(self) -> torch.Tensor:
        """The host buffer every step's masks are filled into: max_num_seqs rows, pinned when asked."""
        if self._bitmask is None:
            bitmask = allocate_token_bitmask(self.max_num_seqs, self.vocab_size)
            self._bitmask = bitmask.pin_memory() if self._pin_bitmask else bitmask
            self._bitmask_np = self._bitmask.numpy()
        return self._bitmask

    def fill_bitmask(self, seqs: list[Sequence]) -> MaskBatch | None:
        """Bitmask rows for `seqs` (all ones where unconstrained); None if none is constrained."""
        start = time.perf_counter()
        backend = self.backend
        self.bitmask_buffer()
        if len(seqs) > self._bitmask.shape[0]:
            raise ValueError(f"{len(seqs)} rows exceed the bitmask's {self._bitmask.shape[0]} (max_num_seqs)")
        view = self._bitmask_np  # C-contiguous int32, this vocabulary's width: what `Matcher.fill_rows` takes
        constrained: list[tuple[int, Matcher]] = []
        extra_stops: list[tuple[int, Matcher, frozenset[int]]] = []
        for i, seq in enumerate(seqs):
            matcher = seq.matcher
            if matcher is None or seq.status.is_finished:
                view[i] = -1  # unconstrained; or finished (async scheduling's dropped row: not masked)
                continue
            constrained.append((i, matcher))
            extra_stop_ids = seq.request.structured_output.extra_stop_ids
            if extra_stop_ids:
                extra_stops.append((i, matcher, extra_stop_ids))
        with backend.mask_lock:
            failed = Matcher.fill_rows(view, constrained)
        errors: dict[int, str] = {}
        for i, exc in failed:  # a budget overrun (or a grammar bug) fails this request alone
            errors[seqs[i].seq_id] = f"{type(exc).__name__}: computing the token mask failed: {exc}"
            view[i] = -1
        for i, matcher, extra_stop_ids in extra_stops:
            if seqs[i].seq_id not in errors:
                _set_bits(view[i], extra_stop_ids, matcher.can_terminate())
        rows = [i for i, _ in constrained]
        if errors:
            rows = [i for i in rows if seqs[i].seq_id not in errors]
        stats = self.stats
        stats.num_mask_steps += 1
        stats.num_mask_rows += len(rows)
        elapsed = time.perf_counter() - start
        stats.mask_seconds += elapsed
        stats.mask_step_seconds.observe(elapsed)
        return MaskBatch(self._bitmask[:len(seqs)], rows, errors)

    # ---- advancing ------------------------------------------------------------------------------

    @staticmethod
    def advance(matcher: Matcher, constraint: StructuredOutputRequest, token_id: int) -> None:
        """Advance a sequence's matcher (of a request with `constraint`) by a sampled token; raises
        `GrammarViolationError` if refused."""
        if token_id in constraint.extra_stop_ids:
            ok = matcher.can_terminate()
        else:
            ok = matcher.accept_token(token_id)
        if not ok:
            raise GrammarViolationError(f"token {token_id} is not allowed by the constraint here")

    def matcher_is_complete(self, matcher: Matcher) -> bool:
        """A sequence's constrained output is finished: a stop token was accepted, or only a stop token
        may follow."""
        if matcher.is_terminated() or not matcher.can_terminate():
            return matcher.is_terminated()
        with self.backend.mask_lock:  # a state seen first computes its mask
            return matcher.is_complete()

    def jump_forward(self, seq: Sequence, max_tokens: int) -> list[int]:
        """Accept and return up to `max_tokens` tokens the grammar forces next (safe ones only)."""
        matcher = seq.matcher
        if matcher is None or not seq.request.structured_output.enable_jump_forward:
            return []
        tokens = self.backend.forced.forced_tokens(matcher, max_tokens)
        if tokens:
            self.stats.num_jumps += 1
            self.stats.num_jump_forward_tokens += len(tokens)
        return tokens


def _set_bits(words: np.ndarray, token_ids, value: bool) -> None:
    """Set (value=True) or clear the bits of `token_ids` in one row of packed int32 mask words."""
    as_unsigned = words.view(np.uint32)
    for t in token_ids:
        bit = np.uint32(1 << (t % 32))
        if value:
            as_unsigned[t // 32] |= bit
        else:
            as_unsigned[t // 32] &= ~bit
