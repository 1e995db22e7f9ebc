"""Iteration-level scheduler: a per-step token budget shared by decodes and (chunked) prefills.

There is no prefill or decode phase: each sequence has `num_tokens` and `num_computed_tokens`, and a
step gives each scheduled sequence some of the difference. Running sequences go first (in priority
order); when the pool runs out of blocks the lowest-priority running sequence is preempted by
recompute (blocks freed, back to waiting, tokens kept). Waiting sequences are admitted in priority
order while the budget, `max_num_seqs` and free blocks allow, reusing prefix-cached blocks.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from formwork.core.block_manager import BlockManager
from formwork.core.metrics import EngineMetrics, now
from formwork.core.sequence import Sequence, SequenceStatus


class ScheduledSequence:
    """`num_new_tokens` of `seq` run this step; `wants_logits` when they reach the end of its tokens (a
    next token is sampled), decided when scheduled."""

    __slots__ = ("seq", "num_new_tokens", "wants_logits")

    def __init__(self, seq: Sequence, num_new_tokens: int, wants_logits: bool | None = None):
        self.seq = seq
        self.num_new_tokens = num_new_tokens
        self.wants_logits = (seq.num_computed_tokens + num_new_tokens == len(seq.token_ids)
                             if wants_logits is None else wants_logits)

    def __repr__(self) -> str:
        return f"ScheduledSequence({self.seq!r}, num_new_tokens={self.num_new_tokens})"


@dataclass
class SchedulerOutput:
    scheduled: list[ScheduledSequence] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)

    @property
    def num_batched_tokens(self) -> int:
        return sum(s.num_new_tokens for s in self.scheduled)

    @property
    def is_empty(self) -> bool:
        return not self.scheduled


class Scheduler:
    """Decides which sequences run in each step and how many of their tokens."""

    def __init__(self, block_manager: BlockManager, *, max_num_seqs: int, max_num_batched_tokens: int,
                 enable_chunked_prefill: bool = True, metrics: EngineMetrics | None = None):
        self.block_manager = block_manager
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.enable_chunked_prefill = enable_chunked_prefill
        self.metrics = metrics if metrics is not None else EngineMetrics()
        self.waiting: list[Sequence] = []  # sorted by Sequence.sort_key
        self.running: list[Sequence] = []  # sorted by Sequence.sort_key

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    @property
    def num_running(self) -> int:
        return len(self.running)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, seq: Sequence) -> None:
        """Queue a new sequence (status WAITING, or WAITING_FOR_GRAMMAR to hold it back)."""
        if seq.status not in (SequenceStatus.WAITING, SequenceStatus.WAITING_FOR_GRAMMAR):
            raise ValueError(f"cannot queue {seq}: status {seq.status.name}")
        bisect.insort(self.waiting, seq, key=_key)

    def finish(self, seq: Sequence, status: SequenceStatus) -> None:
        """Remove `seq` from the queues with a finished `status` and free its blocks at once."""
        if not status.is_finished:
            raise ValueError(f"{status} is not a finished status")
        if seq.status.is_finished:
            return
        queue = self.running if seq.status is SequenceStatus.RUNNING else self.waiting
        queue.remove(seq)
        self.block_manager.free(seq)
        seq.status = status

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self.max_num_batched_tokens
        budget = self._schedule_running(out, budget)
        if not out.preempted:
            self._schedule_waiting(out, budget)
        return out

    def update_from_output(self, out: SchedulerOutput, sampled: dict[int, tuple[int, float]] | None,
                           placeholder: int | None = None) -> list[Sequence]:
        """Advance the scheduled sequences after the forward pass; append the sampled tokens
        (`sampled[seq_id] = (token_id, logprob)`), or (`sampled` None) give each sequence that wanted logits the
        token id `placeholder` with logprob 0 (async scheduling: its token is not read yet; a placeholder at the
        sequence's length limit ends it when read, whatever it is, so it is not scheduled again). Returns the
        sequences that got a new token."""
        advanced = []
        running = SequenceStatus.RUNNING
        cache_full_blocks = self.block_manager.cache_full_blocks
        # without prefix caching nothing registers; with it, only a sequence that filled a block past
        # its registered ones has something to register
        block_size = self.block_manager.block_size if self.block_manager.enable_prefix_caching else None
        for item in out.scheduled:
            seq = item.seq
            if seq.status is not running:
                continue  # finished or aborted meanwhile
            seq.num_computed_tokens += item.num_new_tokens
            if block_size is not None and seq.num_computed_tokens >= (seq.num_hashed_blocks + 1) * block_size:
                cache_full_blocks(seq)
            if sampled is None:
                if item.wants_logits:
                    token_ids = seq.token_ids
                    token_ids.append(placeholder)
                    seq.last_token_logprob = 0.0
                    if len(token_ids) >= seq.length_limit:
                        seq.final_token_pending = True
                    advanced.append(seq)
                continue
            new = sampled.get(seq.seq_id)
            if new is not None:
                seq.append_token(*new)
                advanced.append(seq)
        return advanced

    def _schedule_running(self, out: SchedulerOutput, budget: int) -> int:
        """Schedule the running sequences in order while the budget lasts; preempt from the back when a
        sequence's new tokens need blocks the pool does not have."""
        allocate_slots = self.block_manager.allocate_slots
        block_size = self.block_manager.block_size
        scheduled = out.scheduled
        # the common step: every running sequence's new tokens fit the budget, and its blocks or the pool (decodes)
        for i, seq in enumerate(self.running):
            if seq.final_token_pending:  # async scheduling: it ends when its last token is read
                continue
            num_tokens = len(seq.token_ids)
            num_new = num_tokens - seq.num_computed_tokens
            if not 0 < num_new <= budget or (num_tokens > len(seq.block_table) * block_size
                                            and not allocate_slots(seq, num_new)):  # all or nothing
                return self._schedule_running_from(i, out, budget)
            scheduled.append(ScheduledSequence(seq, num_new, True))
            budget -= num_new
        return budget

    def _schedule_running_from(self, i: int, out: SchedulerOutput, budget: int) -> int:
        """`_schedule_running` from the `i`-th running sequence on, allocating blocks and preempting."""
        allocate_slots = self.block_manager.allocate_slots
        block_size = self.block_manager.block_size
        scheduled = out.scheduled
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            if seq.final_token_pending:  # async scheduling: it ends when its last token is read
                i += 1
                continue
            num_new = min(len(seq.token_ids) - seq.num_computed_tokens, budget)
            # its blocks already hold the new tokens (most decode steps): nothing to allocate
            fits = seq.num_computed_tokens + num_new <= len(seq.block_table) * block_size
            while not fits and not allocate_slots(seq, num_new):
                victim = self.running.pop()
                self._preempt(victim)
                out.preempted.append(victim)
                if victim is seq:
                    break
            else:
                scheduled.append(ScheduledSequence(seq, num_new))
                budget -= num_new
                i += 1
        return budget

    def _schedule_waiting(self, out: SchedulerOutput, budget: int) -> None:
        bm = self.block_manager
        t = now()
        for seq in list(self.waiting):
            if budget <= 0 or len(self.running) >= self.max_num_seqs:
                break
            if seq.status is SequenceStatus.WAITING_FOR_GRAMMAR:
                continue
            computed = bm.get_computed_blocks(seq)
            num_cached = len(computed) * bm.block_size
            num_new = seq.num_tokens - num_cached
            if num_new > budget:
                if not self.enable_chunked_prefill:
                    break
                num_new = budget
            if not bm.allocate_slots(seq, num_new, computed):
                break
            seq.num_computed_tokens = num_cached
            if bm.enable_prefix_caching:
                self.metrics.on_prefix_lookup(seq.num_tokens, num_cached)
            self.waiting.remove(seq)
            seq.status = SequenceStatus.RUNNING
            bisect.insort(self.running, seq, key=_key)
            if seq.request.metrics.first_scheduled_time is None:
                seq.request.metrics.num_cached_tokens = num_cached
            seq.request.metrics.on_scheduled(t)
            out.scheduled.append(ScheduledSequence(seq, num_new))
            budget -= num_new

    def _preempt(self, seq: Sequence) -> None:
        self.block_manager.free(seq)
        seq.num_computed_tokens = 0
        seq.status = SequenceStatus.WAITING
        seq.num_preemptions += 1
        self.metrics.num_preemptions += 1
        bisect.insort(self.waiting, seq, key=_key)


def _key(seq: Sequence) -> tuple[int, float, int]:
    return seq.sort_key
