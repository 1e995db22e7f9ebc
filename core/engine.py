"""LLMEngine: requests in, one `step()` at a time: schedule -> forward -> sample -> postprocess."""

from __future__ import annotations

import hashlib
import logging
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from formwork.core.block_manager import BlockManager
from formwork.core.byte_level import ByteLevelTable
from formwork.core.config import EngineConfig
from formwork.core.detokenizer import IncrementalDetokenizer
from formwork.core.distributed.runner import TensorParallelRunner
from formwork.core.input_batch import InputBatch
from formwork.core.metrics import EngineMetrics, now
from formwork.core.model_files import ModelFiles
from formwork.core.model_runner import ModelRunner
from formwork.core.new_tokens import NewTokens
from formwork.core.output_builder import request_output, step_output
from formwork.core.outputs import RequestOutput
from formwork.core.pending_step import PENDING_TOKEN, PendingStep, drop_placeholder
from formwork.core.request_checks import (DuplicateRequestError, InvalidPromptError, PromptTooLongError,
                                          RequestError, VocabularyRangeError, check_request)
from formwork.core.sampler import Sampler, SamplerOutput
from formwork.core.sampling_params import RequestOutputKind, SamplingParams
from formwork.core.scheduler import Scheduler, SchedulerOutput
from formwork.core.sequence import Request, Sequence, SequenceStatus
from formwork.core.structured_output import MaskBatch, StructuredOutputManager
from formwork.core.warmup import warm_up

logger = logging.getLogger(__name__)
_FINAL_ONLY = RequestOutputKind.FINAL_ONLY

__all__ = ["DuplicateRequestError", "InvalidPromptError", "LLMEngine", "PromptTooLongError", "RequestError",
           "VocabularyRangeError", "resolve_model_path"]


def resolve_model_path(model: str | Path | None) -> Path:
    """`model`, or the embedded demo model directory when `model` is None."""
    if model is not None:
        return Path(model)
    from formwork.core.demo import demo_model_dir  # the demo model is package data, loaded on demand

    return demo_model_dir()


def _set_cpu_threads(threads: int | None) -> None:
    """Give torch `threads` intra-op threads (None: leave it as it is)."""
    if threads is not None and threads != torch.get_num_threads():
        logger.info("torch intra-op threads %d -> %d (cpu_threads)", torch.get_num_threads(), threads)
        torch.set_num_threads(threads)


def _no_masks() -> None:
    """The mask fill of a step without constrained sequences."""
    return None


class LLMEngine:
    """The synchronous engine. Not thread-safe: one caller drives `add_request`/`abort_request`/`step`."""

    def __init__(self, model: str | Path | ModelFiles | None = None, config: EngineConfig | None = None,
                 **options: Any):
        if config is not None and options:
            raise TypeError("pass either an EngineConfig or engine options, not both")
        self.config = config = config if config is not None else EngineConfig(**options)
        self.files = model if isinstance(model, ModelFiles) else ModelFiles.load(resolve_model_path(model))
        self.tokenizer = self.files.tokenizer
        self.byte_table = ByteLevelTable.of(self.tokenizer)  # byte-level BPE: text without tokenizer calls
        bs = config.block_size
        max_model_len = config.resolve_max_model_len(self.files.max_model_len)
        if config.tensor_parallel_size > 1:
            self.runner = TensorParallelRunner(self.files, config, max_model_len)
        else:
            _set_cpu_threads(config.resolve_cpu_threads())
            self.runner = ModelRunner.for_engine(self.files, config, max_model_len)
        num_blocks = self.runner.num_blocks
        if num_blocks * bs < max_model_len:
            logger.warning("KV pool holds %d tokens; max_model_len lowered from %d", num_blocks * bs, max_model_len)
            max_model_len = num_blocks * bs
        self.max_model_len = max_model_len
        self.vocab_size = self.runner.vocab_size
        self.eos_token_ids = list(self.files.eos_token_ids)
        self.metrics = EngineMetrics()
        self.block_manager = BlockManager(num_blocks, bs, enable_prefix_caching=config.enable_prefix_caching)
        self.scheduler = Scheduler(self.block_manager, max_num_seqs=config.max_num_seqs,
                                   max_num_batched_tokens=config.resolve_token_budget(max_model_len),
                                   enable_chunked_prefill=config.enable_chunked_prefill, metrics=self.metrics)
        self.sampler = Sampler(self.vocab_size, self.eos_token_ids)
        # block tables kept between steps (the tensor-parallel workers get each step's inputs as lists)
        self.input_batch: InputBatch | None = None
        if isinstance(self.runner, ModelRunner) and self.runner.buffers is not None:
            self.input_batch = InputBatch(config.max_num_seqs, self.runner.buffers.width, bs)
            self.block_manager.on_table_change = self.input_batch.on_blocks_changed
        self.structured_output = StructuredOutputManager(
            self.tokenizer, self.vocab_size, self.eos_token_ids, max_num_seqs=config.max_num_seqs,
            enable_jump_forward=config.use_jump_forward, overlap=config.overlap_mask_fill,
            compile_max_seconds=config.grammar_compile_budget_s, step_max_seconds=config.grammar_step_budget_s,
            pin_bitmask=config.on_cuda)
        self.new_tokens = NewTokens(self.scheduler, self.structured_output, self.metrics, self.eos_token_ids,
                                    max_model_len)
        self.requests: dict[str, Request] = {}
        # async scheduling (single-process runner only): the step whose tokens are not read yet
        self.async_scheduling = config.use_async_scheduling and self.input_batch is not None
        self._pending: PendingStep | None = None
        self._num_constrained = 0  # live requests with a structured-output constraint
        self._num_multi_seq = 0  # live requests with more than one sequence (n > 1)
        self._rng = random.Random(config.seed)
        if config.use_warmup:
            warm_up(self)  # every kernel variant compiled before the first request
        if config.use_cuda_graphs:
            self.runner.capture_cuda_graphs(config.max_num_seqs)
            self.sampler.capture_graphs(self.runner.graphs, self.structured_output.bitmask_buffer())

    @property
    def is_healthy(self) -> bool:
        """False once a tensor-parallel worker has died (the engine cannot run another step)."""
        return not isinstance(self.runner, TensorParallelRunner) or self.runner.healthy

    def close(self) -> None:
        """Stop the tensor-parallel workers, if any (also done when the engine is garbage-collected)."""
        if isinstance(self.runner, TensorParallelRunner):
            self.runner.close()

    # ---- requests -------------------------------------------------------------------------------

    def tokenize(self, prompt: str) -> list[int]:
        """Token ids of a text prompt, with the tokenizer's special tokens (e.g. BOS)."""
        return list(self.tokenizer(prompt).input_ids)

    def add_request(self, request_id: str, prompt: str | list[int] | None = None,
                    params: SamplingParams | None = None, *, prompt_token_ids: list[int] | None = None,
                    priority: int = 0, arrival_time: float | None = None) -> Request:
        """Queue a request. `prompt` is text or token ids; `prompt_token_ids` overrides the tokenization
        of a text prompt (e.g. a rendered chat). Raises a `RequestError` if it cannot be served."""
        if request_id in self.requests:
            raise DuplicateRequestError(f"request_id {request_id!r} is already in use")
        params = params if params is not None else SamplingParams()
        text = prompt if isinstance(prompt, str) else None
        if prompt_token_ids is None:
            if prompt is None:
                raise InvalidPromptError("a request needs a prompt or prompt_token_ids")
            prompt_token_ids = self.tokenize(prompt) if isinstance(prompt, str) else list(prompt)
        self.check_request(prompt_token_ids, params)
        request = Request(request_id, text, prompt_token_ids, params,
                          arrival_time=now() if arrival_time is None else arrival_time,
                          priority=priority, seeds=self._seeds(params))
        self.structured_output.add_request(request)
        self._num_constrained += request.structured_output is not None
        self._num_multi_seq += len(request.seqs) > 1
        for seq in request.seqs:
            seq.detokenizer = IncrementalDetokenizer(
                self.tokenizer, request.prompt_token_ids, skip_special_tokens=params.skip_special_tokens,
                stop=params.stop_strings, include_stop_str_in_output=params.include_stop_str_in_output,
                byte_table=self.byte_table)
            self.new_tokens.prepare(seq)
            self.scheduler.add(seq)
        self.requests[request_id] = request
        return request

    def abort_request(self, request_id: str) -> RequestOutput | None:
        """Cancel a request, freeing its KV blocks now. Returns its final output (None if unknown)."""
        return self._finish_request(request_id, SequenceStatus.FINISHED_ABORTED)

    def fail_request(self, request_id: str, error: str) -> RequestOutput | None:
        """End a request with an error (e.g. its grammar failed to compile); the engine keeps running."""
        request = self.requests.get(request_id)
        if request is not None:
            request.error = error
        return self._finish_request(request_id, SequenceStatus.FINISHED_ERROR)

    def has_unfinished_requests(self) -> bool:
        return bool(self.requests)

    @property
    def num_unfinished_requests(self) -> int:
        return len(self.requests)

    @property
    def num_running_requests(self) -> int:
        """Requests with at least one sequence in the running batch."""
        return len({seq.request_id for seq in self.scheduler.running})

    @property
    def num_waiting_requests(self) -> int:
        """Unfinished requests with no sequence running (queued, preempted or waiting for a grammar)."""
        return len(self.requests) - self.num_running_requests

    def metrics_snapshot(self) -> dict[str, Any]:
        """Engine metrics under vLLM's names (see `EngineMetrics.snapshot`)."""
        return self.metrics.snapshot(num_running=self.num_running_requests,
                                     num_waiting=self.num_waiting_requests,
                                     num_blocks=self.block_manager.num_blocks,
                                     num_used_blocks=self.block_manager.num_used_blocks)

    # ---- the step -------------------------------------------------------------------------------

    @torch.inference_mode()
    def step(self) -> list[RequestOutput]:
        """Run one iteration; returns the outputs of requests that produced tokens or finished (with async
        scheduling, the tokens of the step before: see `formwork.core.pending_step`)."""
        if self.async_scheduling:
            return self._step_async()
        outputs = self._release_grammars()
        sched = self.scheduler.schedule()
        if sched.is_empty:
            if not outputs and self.structured_output.has_pending:
                self.structured_output.wait_for_grammars(timeout=0.05)  # nothing to run: don't spin
            return outputs
        logit_seqs = [item.seq for item in sched.scheduled if item.wants_logits]
        # overlaps the forward when on a thread; nothing to fill while no live request is constrained
        fill = self.structured_output.start_fill(logit_seqs) if self._num_constrained else _no_masks
        sampled, masks = self._run_model(sched, logit_seqs, fill)
        if masks is not None:
            outputs.extend(self._fail_mask_errors(masks, logit_seqs))
        seq_ids = [seq.seq_id for seq in logit_seqs]
        advanced = self.scheduler.update_from_output(sched, dict(zip(seq_ids, zip(sampled.token_ids,
                                                                                    sampled.logprobs))))
        top, ranks = sampled.top_logprobs, sampled.sampled_ranks
        extras = {seq_ids[i]: (top[i], ranks[i]) for i, row in enumerate(top) if row is not None}
        outputs.extend(self._postprocess(advanced, extras))
        return outputs

    def _step_async(self) -> list[RequestOutput]:
        """Schedule and launch this step on placeholders, then read the previous step's tokens and process
        them while the forward runs, then fill this step's masks and sample, leaving its tokens unread."""
        outputs = self._release_grammars()
        sched = self.scheduler.schedule()
        pending, self._pending = self._pending, None
        if sched.is_empty:
            if pending is not None:
                outputs.extend(self._read_pending(pending))
            elif not outputs and self.structured_output.has_pending:
                self.structured_output.wait_for_grammars(timeout=0.05)  # nothing to run: don't spin
            return outputs
        batch = self.runner.prepare_step(self.input_batch, sched.scheduled)
        if pending is not None:
            pending.feed(batch.input_ids, sched.scheduled)
        logits = self.runner.forward(batch)
        if pending is not None:
            outputs.extend(self._read_pending(pending))  # the host waits for step n's tokens only
        logit_seqs = [item.seq for item in sched.scheduled if item.wants_logits]
        if not logit_seqs:
            self.scheduler.update_from_output(sched, {})
            return outputs
        masks = self.structured_output.start_fill(logit_seqs)() if self._num_constrained else None
        if masks is None:
            sampled = self.sampler.launch(logits, logit_seqs)
        else:
            sampled = self.sampler.launch(logits, logit_seqs, masks.bitmask, masks.rows)
            outputs.extend(self._fail_mask_errors(masks, logit_seqs))
        sampled.start_copy()
        advanced = self.scheduler.update_from_output(sched, None, PENDING_TOKEN)
        self._pending = PendingStep(advanced, logit_seqs, sampled)
        return outputs

    def _fail_mask_errors(self, masks: MaskBatch, seqs: list[Sequence]) -> list[RequestOutput]:
        """Fail the requests whose mask could not be computed this step (each alone)."""
        if not masks.errors:
            return []
        return [self.fail_request(seq.request_id, masks.errors[seq.seq_id]) for seq in seqs
                if seq.seq_id in masks.errors and not seq.status.is_finished]

    def _read_pending(self, pending: PendingStep) -> list[RequestOutput]:
        """The previous step's tokens into its sequences, then their stop checks, text and outputs."""
        out, live = pending.read()
        top, ranks = out.top_logprobs, out.sampled_ranks
        extras = {}
        if top.count(None) != len(top):  # some row asked for logprobs
            extras = {seq.seq_id: (top[row], ranks[row]) for seq, row in live if top[row] is not None}
        return self._postprocess([seq for seq, _ in live], extras)

    def _release_grammars(self) -> list[RequestOutput]:
        """Let requests whose grammar compiled run; fail those whose grammar could not be compiled."""
        outputs = []
        for request, error in self.structured_output.update_ready():
            output = self.fail_request(request.request_id, error)
            if output is not None:
                outputs.append(output)
        return outputs

    def _run_model(self, sched: SchedulerOutput, logit_seqs: list[Sequence],
                   fill: Callable[[], MaskBatch | None]) -> tuple[SamplerOutput, MaskBatch | None]:
        if self.input_batch is not None:
            batch = self.runner.prepare_step(self.input_batch, sched.scheduled)
        else:
            items = []
            for item in sched.scheduled:
                seq, start = item.seq, item.seq.num_computed_tokens
                items.append((seq.token_ids[start:start + item.num_new_tokens], start, seq.block_table))
            batch = self.runner.prepare(items, [item.wants_logits for item in sched.scheduled])
        logits = self.runner.forward(batch)
        masks: MaskBatch | None = fill()
        if not logit_seqs:
            return SamplerOutput([], [], [], []), masks
        if masks is None:
            return self.sampler(logits, logit_seqs), None
        return self.sampler(logits, logit_seqs, masks.bitmask, masks.rows), masks

    def _postprocess(self, advanced: list[Sequence], extras: dict[int, tuple]) -> list[RequestOutput]:
        """Stop checks, text and metrics of the sequences that got a token; the step's outputs (see
        `RequestOutputKind`). `extras[seq_id]` = (top logprobs, sampled rank) of rows that asked for them."""
        t = now()
        for request, exc in self.new_tokens.process_all(advanced, extras):
            self._fail_processing(request, exc)
        if self._num_multi_seq:  # the tokens of each request, counted (a dict keeps the first-seen order)
            counts: dict[Request, int] = {}
            for seq in advanced:
                counts[seq.request] = counts.get(seq.request, 0) + 1
            touched = counts.items()
        else:
            touched = [(seq.request, 1) for seq in advanced]
        outputs = []
        latencies = []
        on_first_token = self.metrics.on_first_token
        for request, count in touched:
            metrics = request.metrics
            first = metrics.first_token_time is None
            last = metrics.last_token_time
            metrics.on_tokens(t, count)
            if first:
                on_first_token(metrics)
            else:
                latencies.append(t - last)
            if request.params.output_kind is _FINAL_ONLY and not request.is_finished:
                continue  # its output comes when it finishes
            output = step_output(request)
            outputs.append(output)
            if output.finished:
                self._retire(request)
        self.metrics.on_step_tokens(len(advanced), latencies)
        return outputs

    def _fail_processing(self, request: Request, exc: Exception) -> None:
        """End `request` with an error that processing its new tokens raised."""
        logger.error("request %s failed while processing its output", request.request_id, exc_info=exc)
        request.error = f"{type(exc).__name__}: {exc}"
        for seq in request.seqs:
            NewTokens.catch_up_text(seq)
            self.scheduler.finish(seq, SequenceStatus.FINISHED_ERROR)

    # ---- outputs --------------------------------------------------------------------------------

    def _finish_request(self, request_id: str, status: SequenceStatus) -> RequestOutput | None:
        request = self.requests.get(request_id)
        if request is None:
            return None
        for seq in request.seqs:
            drop_placeholder(seq)
            NewTokens.catch_up_text(seq)
            self.scheduler.finish(seq, status)
        output = request_output(request)
        self._retire(request)
        return output

    def _retire(self, request: Request) -> None:
        self.structured_output.remove(request)
        self._num_constrained -= request.structured_output is not None
        self._num_multi_seq -= len(request.seqs) > 1
        request.metrics.finished_time = now()
        reasons = [seq.status.finish_reason for seq in request.seqs]
        reason = "error" if request.error else next((r for r in reasons if r != "abort"), "abort")
        self.metrics.on_finished(request.metrics, reason)
        del self.requests[request.request_id]
        request.seqs = ()  # its sequences point back at it: without the cycle both die by reference counting

    # ---- helpers --------------------------------------------------------------------------------

    def check_request(self, token_ids: list[int], params: SamplingParams) -> None:
        """Raise a `RequestError` if this prompt and these parameters cannot be served."""
        check_request(token_ids, params, self.vocab_size, self.max_model_len)

    def _seeds(self, params: SamplingParams) -> list[int]:
        """Per-sequence sampling seeds: from `params.seed` (child i > 0 derived from it), else random."""
        if params.seed is None:
            return [self._rng.getrandbits(63) for _ in range(params.n)]
        seeds = [params.seed % 2**63]
        for i in range(1, params.n):
            digest = hashlib.sha256(f"{params.seed}:{i}".encode()).digest()
            seeds.append(int.from_bytes(digest[:8], "little") >> 1)
        return seeds
