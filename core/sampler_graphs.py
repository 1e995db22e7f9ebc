"""The sampling of a CUDA-graph decode step, as CUDA graphs too (issue 23: the host's time per step).

Launching the split sampler costs the host three Triton launches, their argument handling and a few
allocations each step, about as much as the whole decode forward's graph replay. A decode graph leaves
its logits at fixed addresses (`DecodeGraphs.logits`), so the sampling of those rows can be captured
as well: one graph per decode graph size, without and with a grammar bitmask, reading the sampling
parameters from buffers at fixed addresses (`SamplingBuffers`) and writing the tokens and logprobs into
outputs at fixed addresses. A masked graph first copies the grammar bitmask's rows from the pinned host
buffer the structured-output manager fills every step (`host_bitmask`) to the device: the copy is a
node of the graph, so the host neither launches it nor orders it against a side stream. A step writes
what changed into the buffers (the parameters once per batch composition, then each row's step when a
row draws noise) and replays one graph. Padding rows sample greedily from the padding rows' logits (and
whatever mask rows the host buffer holds there); nobody reads their tokens.

What the eager sampler does before the kernel (penalties, logit bias, min_tokens) it does in place on
the graph's logits buffer, and the top-N logprobs are computed eagerly after the replay, so the graph
serves every kind of row.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

import numpy as np
import torch

from formwork import kernels
from formwork.core.cuda_graphs import DecodeGraphs
from formwork.kernels.sampling_tensors import DTYPES, FIELDS, NUMPY, SamplingTensors, check_arrays, packed_layout

GREEDY_ROW = {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "seeds": 0, "steps": 0}


class SamplingBuffers:
    """The six sampling fields of up to `capacity` rows at fixed device addresses (SamplingTensors'
    packed layout), written through one pinned staging buffer: a whole batch in one copy, or its steps
    alone. Rows past the batch are greedy. Rewriting the staging buffer is safe for the reason the eager
    sampler's is: the engine launches a step's sampling only after it has read the previous step's
    tokens, so every copy queued before it has run."""

    def __init__(self, capacity: int, device: torch.device):
        self.capacity = capacity
        offsets, size = packed_layout(capacity)
        self.host = torch.empty(size, dtype=torch.uint8, pin_memory=device.type == "cuda")
        self.device_buffer = torch.empty(size, dtype=torch.uint8, device=device)
        host_np = self.host.numpy()

        def span(name: str) -> slice:
            return slice(offsets[name], offsets[name] + capacity * DTYPES[name].itemsize)

        self._host = {name: host_np[span(name)].view(NUMPY[name]) for name in FIELDS}
        self._device = {name: self.device_buffer[span(name)].view(DTYPES[name]) for name in FIELDS}
        self._steps_span = span("steps")
        self._views: dict[int, SamplingTensors] = {}
        self.holder: object | None = None  # whose rows the buffers hold (see `write_batch`)
        for name in FIELDS:
            self._host[name][:] = GREEDY_ROW[name]
        self.device_buffer.copy_(self.host)

    def tensors(self, size: int) -> SamplingTensors:
        """The first `size` rows as the kernel's parameters (views, the same ones for every call)."""
        view = self._views.get(size)
        if view is None:
            view = self._views[size] = SamplingTensors(*(self._device[name][:size] for name in FIELDS))
        return view

    def write_batch(self, holder: object, arrays: dict[str, np.ndarray]) -> None:
        """A new batch's rows (checked as `SamplingTensors.from_arrays` checks them), the rest greedy;
        `holder` marks whose rows these are."""
        check_arrays(arrays)
        rows = len(arrays["temperature"])
        if rows > self.capacity:
            raise ValueError(f"{rows} rows exceed the sampling buffers' {self.capacity}")
        for name in FIELDS:
            self._host[name][:rows] = arrays[name]
            self._host[name][rows:] = GREEDY_ROW[name]
        self.device_buffer.copy_(self.host, non_blocking=True)
        self.holder = holder

    def write_steps(self, steps: np.ndarray) -> None:
        """Each row's step (its number of generated tokens) for the batch the buffers hold."""
        rows = len(steps)
        self._host["steps"][:rows] = steps
        span = slice(self._steps_span.start, self._steps_span.start + rows * DTYPES["steps"].itemsize)
        self.device_buffer[span].copy_(self.host[span], non_blocking=True)


class SamplerGraphs:
    """Captured samplings of the decode graphs' logits, by (graph size, masked)."""

    def __init__(self, decode: DecodeGraphs, host_bitmask: torch.Tensor | None = None):
        self.sizes = decode.sizes
        self.logits = decode.logits
        self.pool = None  # their own: a decode replay reuses its capture's freed memory, which must not hold outputs
        capacity, vocab = decode.logits.shape
        self.buffers = SamplingBuffers(capacity, decode.device)
        shape = (capacity, (vocab + 31) // 32)
        on_cuda = decode.device.type == "cuda"
        if host_bitmask is None or host_bitmask.shape[0] < capacity or host_bitmask.shape[1] != shape[1] or (
                on_cuda and not host_bitmask.is_pinned()):
            host_bitmask = torch.full(shape, -1, dtype=torch.int32, pin_memory=on_cuda)
        self.host_bitmask = host_bitmask
        self.bitmask = torch.full(shape, -1, dtype=torch.int32, device=decode.device)
        self.replays: dict[tuple[int, bool], Callable[[], tuple[torch.Tensor, torch.Tensor]]] = {}

    @classmethod
    def of(cls, decode: DecodeGraphs, host_bitmask: torch.Tensor | None = None) -> SamplerGraphs:
        """The samplings of `decode`'s graph sizes, captured; masked ones copy their rows of `host_bitmask`
        (pinned on CUDA, at least as many rows as the largest graph; else a buffer of their own)."""
        graphs = cls(decode, host_bitmask)
        graphs.capture()
        return graphs

    @torch.inference_mode()
    def capture(self) -> None:
        """For each size, largest first, and without then with a mask: run the sampling once (kernel
        compiles, lazy allocations), then record it (all into one memory pool of their own)."""
        for size in reversed(self.sizes):
            for masked in (False, True):
                def run(size: int = size, masked: bool = masked) -> tuple[torch.Tensor, torch.Tensor]:
                    bitmask = None
                    if masked:
                        bitmask = self.bitmask[:size]
                        bitmask.copy_(self.host_bitmask[:size], non_blocking=True)
                    return kernels.sample(self.logits[:size], self.buffers.tensors(size), bitmask)

                run()
                self.replays[(size, masked)] = self._record(run)

    def _record(self, run: Callable[[], tuple[torch.Tensor, torch.Tensor]]
                ) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
        """A replay of `run`'s work that returns its outputs (the same tensors at every replay)."""
        torch.cuda.synchronize(self.logits.device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            outputs = run()
        if self.pool is None:
            self.pool = graph.pool()

        def replay() -> tuple[torch.Tensor, torch.Tensor]:
            graph.replay()
            return outputs
        return replay

    def size_for(self, logits: torch.Tensor) -> int | None:
        """The graph size that samples `logits` when they are the first rows of the decode graphs' logits
        (a decode graph's output), else None."""
        if logits.data_ptr() != self.logits.data_ptr() or logits.stride() != self.logits.stride():
            return None
        i = bisect_left(self.sizes, logits.shape[0])
        return self.sizes[i] if i < len(self.sizes) else None

    def sample(self, size: int, rows: int, bitmask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Replay the sampling of `size` rows on what the buffers hold now, masked by `bitmask` (host rows:
        copied into `host_bitmask` first unless they are its own first rows); the tokens and logprobs of
        the first `rows` rows."""
        if bitmask is not None and bitmask.data_ptr() != self.host_bitmask.data_ptr():
            self.host_bitmask[:rows].copy_(bitmask)
        tokens, logprobs = self.replays[(size, bitmask is not None)]()
        return tokens[:rows], logprobs[:rows]
