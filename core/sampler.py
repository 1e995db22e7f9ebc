"""Engine-side sampling: penalties, logit bias and min_tokens in torch, then `kernels.sample`.

Logprobs (the sampled token's and the top-N) are computed from the processed logits (after penalties,
bias and any grammar mask) at temperature 1, the same distribution `kernels.sample` reports for the
chosen token.

Grammar masks: `bitmask` has one packed int32 row per logits row (all ones where unconstrained) and
`bitmask_rows` lists the constrained rows. On CUDA the bitmask goes to the fused `kernels.sample`; on
the CPU only the constrained rows are masked (a numpy bit unpack) before sampling, since the torch
reference would unpack every row. A CPU batch whose rows are all greedy and want no logprobs takes one
numpy argmax (the reference's temperature-0 rule) instead of the kernel call and its parameter tensors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import torch

from formwork.core.bitmask_upload import BitmaskUpload
from formwork.core.cuda_graphs import DecodeGraphs
from formwork.core.host_to_device import is_on, tensor_on
from formwork.core.sampler_graphs import SamplerGraphs
from formwork.core.sequence import Sequence
from formwork.kernels import SamplingTensors, apply_token_bitmask, sample
from formwork.kernels.dispatch import BACKEND_ENV
from formwork.kernels.reference.sampling import NEG_INF


@dataclass
class SamplerOutput:
    token_ids: list[int]
    logprobs: list[float]  # of each sampled token; all 0.0 when no row asked for logprobs (never reported)
    # per row: (token id, logprob, rank) of the top-N tokens when the row asked for logprobs, else None
    top_logprobs: list[list[tuple[int, float, int]] | None]
    sampled_ranks: list[int | None]


_SEQ_ID = attrgetter("seq_id")
SPARSE_MASK_SHARE = 8  # rows are masked token by token when at most 1 word in this many forbids a token


class Sampler:
    """Samples one next token per row of logits [rows, vocab], one row per sequence in `seqs`."""

    def __init__(self, vocab_size: int, eos_token_ids: Collection[int]):
        self.vocab_size = vocab_size
        self.eos_token_ids = list(eos_token_ids)
        self._rows: BatchRows | None = None  # the last batch's row parameters
        self._upload_bitmask = BitmaskUpload()
        # greedy-only CPU batches take one argmax here unless a backend other than torch is forced (read once)
        self._argmax_on_cpu = os.environ.get(BACKEND_ENV, "").strip().lower() in ("", "torch")
        self.graphs: SamplerGraphs | None = None  # the decode graphs' samplings (`capture_graphs`)
        self._staging = PinnedStaging()  # where `SampledBatch.start_copy` copies the tokens on CUDA

    def capture_graphs(self, decode: DecodeGraphs, host_bitmask: torch.Tensor | None = None) -> None:
        """Sample the logits of `decode`'s graphs through captured graphs from now on; `host_bitmask`: the
        (pinned) buffer the steps' masks are filled into, which masked graphs copy from."""
        self.graphs = SamplerGraphs.of(decode, host_bitmask)

    def __call__(self, logits: torch.Tensor, seqs: list[Sequence], bitmask: torch.Tensor | None = None,
                 bitmask_rows: list[int] | None = None) -> SamplerOutput:
        return self.launch(logits, seqs, bitmask, bitmask_rows).result()

    def launch(self, logits: torch.Tensor, seqs: list[Sequence], bitmask: torch.Tensor | None = None,
               bitmask_rows: list[int] | None = None) -> SampledBatch:
        """Sample without reading the result on the host: the tokens stay on the logits' device until
        `SampledBatch.result()` (what async scheduling feeds the next step from)."""
        if logits.shape[0] != len(seqs):
            raise ValueError(f"{logits.shape[0]} rows of logits for {len(seqs)} sequences")
        logits = logits.float()
        rows = self._rows_of(seqs)
        for row in rows.adjusting:
            self._adjust_row(logits, row, seqs[row])
        graph_size = self.graphs.size_for(logits) if self.graphs is not None else None
        if graph_size is not None:
            return self._launch_graph(logits, seqs, rows, graph_size, bitmask)
        if bitmask is not None and logits.device.type == "cpu":
            _mask_rows_cpu(logits, bitmask, list(range(len(seqs))) if bitmask_rows is None else bitmask_rows)
            bitmask = None
        elif bitmask is not None:
            bitmask = self._upload_bitmask(bitmask, logits.device)
        if rows.argmax_only and bitmask is None and self._argmax_on_cpu and logits.device.type == "cpu":
            return SampledBatch.of_list(_argmax_tokens(logits))
        # a row's logprob is only reported when it asked for logprobs
        token_ids, logprobs = sample(logits, rows.tensors(seqs, logits.device), bitmask,
                                     with_logprobs=bool(rows.with_logprobs))
        top = _TopLogprobs.of(logits, seqs, rows.with_logprobs, token_ids, bitmask)
        return SampledBatch(token_ids, logprobs, top, staging=self._staging)

    def _launch_graph(self, logits: torch.Tensor, seqs: list[Sequence], rows: BatchRows, size: int,
                      bitmask: torch.Tensor | None) -> SampledBatch:
        """`launch` through the captured sampling of `size` rows: the parameters (once per batch, then the
        steps of rows that draw noise) into the graphs' buffers, then one replay (which copies the mask)."""
        graphs, num_rows = self.graphs, len(seqs)
        buffers = graphs.buffers
        if buffers.holder is not rows:
            buffers.write_batch(rows, rows.arrays(seqs))
        elif rows.any_random:
            buffers.write_steps(rows.steps(seqs))
        token_ids, logprobs = graphs.sample(size, num_rows, bitmask)
        mask = None if bitmask is None else graphs.bitmask[:num_rows]
        top = _TopLogprobs.of(logits, seqs, rows.with_logprobs, token_ids, mask)
        return SampledBatch(token_ids, logprobs if rows.with_logprobs else None, top, staging=self._staging)

    def _rows_of(self, seqs: list[Sequence]) -> "BatchRows":
        """The per-row parameters of `seqs`: the previous step's when the batch holds the same sequences
        in the same order (what a sequence's parameters say never changes), else built anew."""
        key = tuple(map(_SEQ_ID, seqs))  # ids, not the sequences: a finished one must not stay referenced
        rows = self._rows
        if rows is None or rows.key != key:
            rows = self._rows = BatchRows(key, seqs)
        return rows

    def _adjust_row(self, logits: torch.Tensor, row: int, seq: Sequence) -> None:
        """Penalties, then logit bias, then min_tokens' bans, on one row in place."""
        self._apply_penalties(logits, row, seq)
        self._apply_logit_bias(logits, row, seq)
        self._apply_min_tokens(logits, row, seq)

    def _apply_penalties(self, logits: torch.Tensor, row: int, seq: Sequence) -> None:
        p = seq.params
        if not p.needs_penalties:
            return
        out_ids = tensor_on(seq.output_token_ids, torch.long, logits.device)
        counts = torch.bincount(out_ids, minlength=self.vocab_size)[:self.vocab_size].to(logits.dtype)
        if p.repetition_penalty != 1.0:
            prompt_ids = tensor_on(seq.token_ids[:seq.num_prompt_tokens], torch.long, logits.device)
            seen = counts > 0
            seen[prompt_ids] = True
            row_logits = logits[row]
            penalised = torch.where(row_logits > 0, row_logits / p.repetition_penalty,
                                    row_logits * p.repetition_penalty)
            logits[row] = torch.where(seen, penalised, row_logits)
        if p.frequency_penalty != 0.0:
            logits[row] -= p.frequency_penalty * counts
        if p.presence_penalty != 0.0:
            logits[row] -= p.presence_penalty * (counts > 0).to(logits.dtype)

    @staticmethod
    def _apply_logit_bias(logits: torch.Tensor, row: int, seq: Sequence) -> None:
        bias = seq.params.logit_bias
        if not bias:
            return
        ids = list(bias)  # the engine checked that every id is inside the vocabulary
        device = logits.device
        logits[row, tensor_on(ids, torch.long, device)] += tensor_on([bias[t] for t in ids], logits.dtype, device)

    def _apply_min_tokens(self, logits: torch.Tensor, row: int, seq: Sequence) -> None:
        p = seq.params
        if seq.num_output_tokens >= p.min_tokens:
            return
        banned = list(p.stop_token_ids) + ([] if p.ignore_eos else self.eos_token_ids)
        banned = [t for t in banned if t < self.vocab_size]
        if banned:
            logits[row, tensor_on(banned, torch.long, logits.device)] = float("-inf")

class SampledBatch:
    """One step's sampled tokens (and logprobs), left where the sampler made them: `token_ids` can feed the
    next step's inputs on the device; `result()` reads everything on the host. `start_copy` queues the
    device-to-host copies at once (behind the sampling, ahead of any later forward), so `result()` waits for
    this step's sampling only, not for work queued after it."""

    def __init__(self, token_ids: torch.Tensor | None, logprobs: torch.Tensor | None, top: _TopLogprobs | None,
                 host_ids: list[int] | None = None, staging: PinnedStaging | None = None):
        self._token_ids, self._host_ids, self._staging = token_ids, host_ids, staging
        # what `result` reads: the tensors themselves, or their pinned host copies after `start_copy`
        self._readable: tuple = (token_ids, logprobs, top)
        self._copied: torch.cuda.Event | None = None

    @classmethod
    def of_list(cls, token_ids: list[int]) -> SampledBatch:
        """Tokens already read on the host (the CPU argmax), no logprobs."""
        return cls(None, None, None, token_ids)

    @property
    def token_ids(self) -> torch.Tensor:
        """The sampled ids, one per row, where they were sampled (int64 on the CPU argmax path)."""
        if self._token_ids is None:
            self._token_ids = torch.tensor(self._host_ids, dtype=torch.int64)
        return self._token_ids

    def start_copy(self) -> None:
        """Queue the copies to pinned host memory (CUDA only; on the CPU there is nothing to copy)."""
        if self._token_ids is None or not self._token_ids.is_cuda:
            return
        token_ids, logprobs, top = self._readable
        to_pinned = _to_pinned if self._staging is None else self._staging.next_copier()
        self._readable = (to_pinned(token_ids), None if logprobs is None else to_pinned(logprobs),
                          None if top is None else top.to_pinned())
        self._copied = torch.cuda.Event()
        self._copied.record()

    def result(self) -> SamplerOutput:
        """The host lists of this step (waits for the copies queued by `start_copy`, if any)."""
        if self._copied is not None:
            self._copied.synchronize()
        token_ids, logprobs, top = self._readable
        token_list = self._host_ids if self._host_ids is not None else token_ids.tolist()
        n = len(token_list)
        logprob_list = [0.0] * n if logprobs is None else logprobs.tolist()
        top_lists, ranks = top.lists(n) if top is not None else ([None] * n, [None] * n)
        return SamplerOutput(token_list, logprob_list, top_lists, ranks)


def _to_pinned(tensor: torch.Tensor) -> torch.Tensor:
    host = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=True)
    host.copy_(tensor, non_blocking=True)
    return host


class PinnedStaging:
    """Pinned host buffers that a step's sampled tokens and logprobs are copied into, kept from step to step
    instead of allocated each time. Two sets, used in turn: a step's copies are read (`SampledBatch.result`)
    before the next step's sampling is launched, so the set a step writes was read two steps ago."""

    def __init__(self) -> None:
        self._sets: list[dict[tuple[int, torch.dtype], torch.Tensor]] = [{}, {}]
        self._turn = 0

    def next_copier(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """A function that copies a 1-D device tensor into this step's buffer of its dtype (a view of its
        length), without blocking the host."""
        buffers = self._sets[self._turn]
        self._turn ^= 1
        calls = iter(range(len(buffers) + 8))

        def copy(tensor: torch.Tensor) -> torch.Tensor:
            rows, slot = tensor.shape[0], (next(calls), tensor.dtype)  # the n-th copy of a step: its own buffer
            host = buffers.get(slot)
            if host is None or host.shape[0] < rows:
                host = buffers[slot] = torch.empty(max(rows, 256), dtype=tensor.dtype, pin_memory=True)
            view = host[:rows]
            view.copy_(tensor, non_blocking=True)
            return view
        return copy


class _TopLogprobs:
    """The top-N logprobs and sampled ranks of the rows that asked for logprobs, as tensors until `lists`."""

    def __init__(self, rows: list[int], counts: list[int], ranks: torch.Tensor, top_lp: torch.Tensor | None,
                 top_ids: torch.Tensor | None):
        self.rows, self.counts = rows, counts
        self.ranks, self.top_lp, self.top_ids = ranks, top_lp, top_ids

    @classmethod
    def of(cls, logits: torch.Tensor, seqs: list[Sequence], rows: list[int], token_ids: torch.Tensor,
           bitmask: torch.Tensor | None) -> _TopLogprobs | None:
        """From the processed logits of the `rows` of `seqs` that asked for logprobs (None: no such row)."""
        if not rows:
            return None
        selected = logits[rows]
        if bitmask is not None:
            apply_token_bitmask(selected, bitmask[rows])
        logprobs = torch.log_softmax(selected, dim=-1)
        chosen_lp = logprobs.gather(1, token_ids[rows].unsqueeze(1))
        ranks = (logprobs > chosen_lp).sum(dim=1) + 1
        counts = [seqs[i].params.logprobs for i in rows]
        top_lp = top_ids = None
        if max(counts):
            top_lp, top_ids = logprobs.topk(max(counts), dim=1)
        return cls(rows, counts, ranks, top_lp, top_ids)

    def to_pinned(self) -> _TopLogprobs:
        pinned = [None if t is None else _to_pinned(t) for t in (self.ranks, self.top_lp, self.top_ids)]
        return _TopLogprobs(self.rows, self.counts, *pinned)

    def lists(self, num_rows: int) -> tuple[list[list[tuple[int, float, int]] | None], list[int | None]]:
        """Per row of the batch: (top-N as (token id, logprob, rank), sampled rank), None for other rows."""
        top: list[list[tuple[int, float, int]] | None] = [None] * num_rows
        ranks: list[int | None] = [None] * num_rows
        sampled_ranks = self.ranks.tolist()
        top_lp = self.top_lp.tolist() if self.top_lp is not None else None
        top_ids = self.top_ids.tolist() if self.top_ids is not None else None
        for j, (row, n) in enumerate(zip(self.rows, self.counts)):
            ranks[row] = int(sampled_ranks[j])
            top[row] = [(top_ids[j][k], top_lp[j][k], k + 1) for k in range(n)] if n else []
        return top, ranks


class BatchRows:
    """What the sampler reads of a batch's sequences every step, gathered once per batch composition:
    the rows that adjust their logits first or want logprobs, and the sampling parameters as arrays."""

    def __init__(self, key: tuple[int, ...], seqs: list[Sequence]):
        self.key = key
        self.adjusting = [row for row, seq in enumerate(seqs) if seq.adjusts_logits]
        self.with_logprobs = [row for row, seq in enumerate(seqs) if seq.params.logprobs is not None]
        table = np.array([seq.sampling_row for seq in seqs], dtype=np.float64).reshape(len(seqs), 4)
        self.temperature, self.top_p, self.min_p = table[:, 0], table[:, 2], table[:, 3]
        self.top_k = table[:, 1].astype(np.int64)
        self.any_random = bool((self.temperature > 0).any())  # else no row reads its seed or step
        self.argmax_only = not self.any_random and not self.with_logprobs  # every token is its row's argmax
        self.seeds = np.array([seq.seed for seq in seqs], dtype=np.int64)
        self.num_prompt_tokens = np.array([seq.num_prompt_tokens for seq in seqs], dtype=np.int64)
        self._tensors: SamplingTensors | None = None  # checked and copied once; each step rewrites its steps
        self._steps_host: torch.Tensor | None = None  # off the CPU: the steps' (pinned) staging buffer

    def tensors(self, seqs: list[Sequence], device: torch.device) -> SamplingTensors:
        """The kernel's parameters for this step (each row's step: its number of generated tokens). The
        first step of a batch checks every field and moves them in one packed copy; later steps rewrite
        only the steps (not at all when every row is greedy: no row draws noise): in place on the CPU,
        else through a pinned buffer and one copy that does not block the host. Rewriting is safe: the
        engine launches a step's sampling only after it has read the previous step's sampled tokens,
        so the previous sampling has finished reading both buffers."""
        tensors = self._tensors
        if tensors is None or not is_on(tensors.steps, device):
            tensors = self._tensors = SamplingTensors.from_arrays(**self.arrays(seqs), device=device)
            self._steps_host = None if device.type == "cpu" else torch.empty(
                len(seqs), dtype=torch.int64, pin_memory=device.type == "cuda")
            return tensors
        if self.any_random:
            host = self._steps_host
            np.subtract(self._token_counts(seqs), self.num_prompt_tokens,
                        out=tensors.steps.numpy() if host is None else host.numpy())
            if host is not None:
                tensors.steps.copy_(host, non_blocking=True)
        return tensors

    def arrays(self, seqs: list[Sequence]) -> dict[str, np.ndarray]:
        """The six sampling fields of this step, as `SamplingTensors.from_arrays` takes them."""
        return {"temperature": self.temperature, "top_k": self.top_k, "top_p": self.top_p, "min_p": self.min_p,
                "seeds": self.seeds, "steps": self.steps(seqs)}

    def steps(self, seqs: list[Sequence]) -> np.ndarray:
        """Each row's number of generated tokens (never negative: a sequence keeps its prompt)."""
        return self._token_counts(seqs) - self.num_prompt_tokens

    @staticmethod
    def _token_counts(seqs: list[Sequence]) -> np.ndarray:
        return np.fromiter([len(seq.token_ids) for seq in seqs], dtype=np.int64, count=len(seqs))


def _argmax_tokens(logits: torch.Tensor) -> list[int]:
    """Each row's greedy token as the torch reference samples it at temperature 0 (the lowest id among
    the maxima; -1 where the row allows nothing), without building its parameter tensors."""
    values = logits.numpy()
    ids = values.argmax(axis=1)
    allowed = values[np.arange(len(ids)), ids] > NEG_INF
    if not allowed.all():
        ids[~allowed] = -1
    return ids.tolist()


def _mask_rows_cpu(logits: torch.Tensor, bitmask: torch.Tensor, rows: list[int]) -> None:
    """In place: -inf for the tokens a packed int32 `bitmask` row forbids, in the given rows only.
    Where few words forbid anything (free text between tagged regions forbids a handful of tokens),
    only those tokens are set; otherwise the rows are masked whole."""
    if not rows:
        return
    vocab = logits.shape[1]
    words = bitmask.numpy()[rows]
    row_of, word_of = np.nonzero(words != -1)  # the words with a forbidden token
    if len(row_of) * SPARSE_MASK_SHARE <= words.size:
        bits = np.unpackbits(words[row_of, word_of].view(np.uint8).reshape(-1, 4), axis=1, bitorder="little")
        which, bit = np.nonzero(bits == 0)
        tokens = word_of[which] * 32 + bit
        inside = tokens < vocab
        row_ids = np.asarray(rows, dtype=np.int64)[row_of[which][inside]]
        logits[torch.from_numpy(row_ids), torch.from_numpy(tokens[inside])] = float("-inf")
        return
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")[:, :vocab]
    forbidden = torch.from_numpy(bits) == 0
    if rows == list(range(logits.shape[0])):
        logits.masked_fill_(forbidden, float("-inf"))
        return
    index = torch.tensor(rows, dtype=torch.long)
    logits[index] = logits[index].masked_fill(forbidden, float("-inf"))
