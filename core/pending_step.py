"""Async scheduling: a step whose tokens are sampled but not yet read on the host.

With `EngineConfig.async_scheduling` the engine appends a placeholder (`PENDING_TOKEN`) to every sequence
that sampled in step n, schedules step n+1 on that assumption, and launches its forward with the
placeholders' input ids copied from step n's sampled tokens on the device (`PendingStep.feed`). Only then
does the host wait for step n's tokens (`PendingStep.read`): on a GPU, step n+1's forward is already queued,
so the CPU's scheduling, input packing, output processing and mask filling overlap the GPU's work.

What the placeholder costs: a sequence that step n finishes (EOS, a stop string, an abort) has one wasted
row in step n+1, whose token is dropped; a sequence whose placeholder is its last token by length is not
scheduled again (`Sequence.final_token_pending`, set by `Scheduler.update_from_output`). Jump-forward, which
appends several tokens, is off.
"""

from __future__ import annotations

import torch

from formwork.core.host_to_device import tensor_on
from formwork.core.sampler import SampledBatch, SamplerOutput
from formwork.core.scheduler import ScheduledSequence
from formwork.core.sequence import Sequence

PENDING_TOKEN = -2  # never a token id: a forward fed one by mistake fails its embedding lookup


class PendingStep:
    """Step n's sequences that got a placeholder (`seqs`), and `row_seqs`, the sequence of each row of
    `sampled` (every sequence sampled in step n: `seqs` and those that finished before their placeholder)."""

    def __init__(self, seqs: list[Sequence], row_seqs: list[Sequence], sampled: SampledBatch):
        self.seqs, self.row_seqs, self.sampled = seqs, row_seqs, sampled
        self._row_of: dict[int, int] | None = None

    @property
    def row_of(self) -> dict[int, int]:
        """seq_id -> row in `sampled` (built when the rows are not simply `seqs` in order)."""
        if self._row_of is None:
            self._row_of = {seq.seq_id: row for row, seq in enumerate(self.row_seqs)}
        return self._row_of

    def feed(self, input_ids: torch.Tensor, scheduled: list[ScheduledSequence]) -> None:
        """Write the sampled ids of the placeholders among the step's new tokens into `input_ids` (the step's
        flat input ids, on the device), after the packed inputs were copied there. Ids below zero (a row whose
        constraint allowed nothing: its request fails when read) become 0 so the forward stays in range."""
        if [item.seq for item in scheduled] == self.row_seqs:  # identity comparison: the same rows in order,
            self._copy_rows(input_ids, len(scheduled))      # each running one token, its placeholder
            return
        dst, src = [], []
        offset = 0
        row_of = self.row_of
        for item in scheduled:
            offset += item.num_new_tokens
            seq = item.seq
            if item.wants_logits and seq.token_ids[-1] == PENDING_TOKEN:
                dst.append(offset - 1)
                src.append(row_of[seq.seq_id])
        if not dst:
            return
        if dst == src and src[-1] == len(src) - 1:  # the same rows in the same order: one slice copy
            self._copy_rows(input_ids, len(dst))
            return
        tokens = self.sampled.token_ids
        if tokens.device != input_ids.device:
            tokens = tokens.to(input_ids.device, non_blocking=True)
        device = input_ids.device
        picked = tokens.index_select(0, tensor_on(src, torch.int64, device)).clamp_(min=0)
        input_ids.index_copy_(0, tensor_on(dst, torch.int64, device), picked.to(input_ids.dtype))

    def _copy_rows(self, input_ids: torch.Tensor, count: int) -> None:
        """The first `count` sampled ids into the first `count` input ids (clamped there: one kernel)."""
        tokens = self.sampled.token_ids
        if tokens.device != input_ids.device:
            tokens = tokens.to(input_ids.device, non_blocking=True)
        if tokens.dtype == input_ids.dtype:
            torch.clamp(tokens[:count], min=0, out=input_ids[:count])
        else:
            input_ids[:count].copy_(tokens[:count].clamp(min=0))

    def read(self) -> tuple[SamplerOutput, list[tuple[Sequence, int]]]:
        """Step n's host results, and the (sequence, row) pairs still to process: each unfinished sequence's
        placeholder is replaced by its sampled token (aborted sequences dropped theirs, `drop_placeholder`)."""
        out = self.sampled.result()
        live = []
        seqs = self.seqs
        row_of = None if seqs == self.row_seqs else self.row_of  # None: row i is seqs[i]
        for i, seq in enumerate(seqs):
            if seq.status.is_finished:
                continue
            row = i if row_of is None else row_of[seq.seq_id]
            logprob = out.logprobs[row]
            seq.token_ids[-1] = out.token_ids[row]
            seq.last_token_logprob = logprob
            seq.cumulative_logprob += logprob
            live.append((seq, row))
        return out, live


def drop_placeholder(seq: Sequence) -> None:
    """Remove `seq`'s unread last token, if it has one (it finishes before the token is read)."""
    if seq.token_ids and seq.token_ids[-1] == PENDING_TOKEN:
        seq.token_ids.pop()
