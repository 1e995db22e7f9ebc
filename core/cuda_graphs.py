"""Decode steps as CUDA graphs, one per padded batch size (as vLLM and nano-vllm do).

A graph is captured on a padded decode batch packed into the runner's persistent input buffers (see
`InputBuffers`: a batch of `n` rows has the same addresses at every step), so a replay only needs the
step's one host-to-device copy. Sizes are 1, 2, 4, 8, then multiples of 16, and `max_num_seqs`; a decode
batch of `k` sequences runs the smallest graph of at least `k` rows (padding rows write no KV). Graphs are
captured largest first and share one memory pool. A graph runs the whole decode forward, the logits head
included: it writes the float32 logits of its `n` rows into `logits[:n]`, one buffer every graph shares,
so the sampler (see `SamplerGraphs`) always finds a step's logits at the same address.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

import torch

from formwork.core.forward_batch import ForwardBatch


class DecodeGraphs:
    """Captured decode graphs by padded batch size."""

    def __init__(self, sizes: list[int], vocab_size: int, device: torch.device):
        if not sizes or min(sizes) < 1:
            raise ValueError(f"graph sizes must be positive, got {sizes}")
        self.sizes = sorted(set(sizes))
        self.device = device
        self.logits = torch.empty(self.sizes[-1], vocab_size, dtype=torch.float32, device=device)
        self.replays: dict[int, Callable[[], None]] = {}
        self.pool = None

    @staticmethod
    def buckets_for(max_num_seqs: int) -> list[int]:
        """1, 2, 4, 8, 16, 32, 48, ... below `max_num_seqs`, and `max_num_seqs` itself."""
        if max_num_seqs < 1:
            raise ValueError(f"max_num_seqs must be positive, got {max_num_seqs}")
        sizes = [s for s in (1, 2, 4, 8) if s < max_num_seqs] + list(range(16, max_num_seqs, 16))
        return sizes + [max_num_seqs]

    def bucket_for(self, num_seqs: int) -> int | None:
        """The smallest graph size holding `num_seqs` rows (None: too many, run eagerly)."""
        i = bisect_left(self.sizes, num_seqs)
        return self.sizes[i] if i < len(self.sizes) else None

    @torch.inference_mode()
    def capture(self, make_batch: Callable[[int], ForwardBatch],
                run_model: Callable[[ForwardBatch, torch.Tensor], None]) -> None:
        """For each size, largest first: pack its batch, run it once eagerly (kernel compiles, lazy
        allocations), then record it. `run_model(batch, out)` writes the batch's logits into `out`."""
        for size in reversed(self.sizes):
            batch = make_batch(size)

            def step(batch: ForwardBatch = batch, size: int = size) -> None:
                run_model(batch, self.logits[:size])

            step()
            self._record(size, step)

    def _record(self, size: int, step: Callable[[], None]) -> None:
        torch.cuda.synchronize(self.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            step()
        if self.pool is None:
            self.pool = graph.pool()
        self.replays[size] = graph.replay

    def replay(self, size: int) -> torch.Tensor:
        """Run the graph of `size` rows on the inputs now in the buffers; its logits [size, vocab]."""
        self.replays[size]()
        return self.logits[:size]
