"""Persistent step-input buffers: one host-to-device copy per step.

Every field of a step's `ForwardBatch` (ids, positions, slot mapping, context lengths, query offsets,
block tables, logits rows) is packed into one staging buffer on the host (pinned on CUDA), copied to
one device buffer of the same size with a single `copy_`, and handed to the model as typed views into
it (on the CPU the staging buffer is the device buffer: no copy; a step's forward ends before the next
step writes it). Fields start on 256-byte boundaries (Triton specialises kernels on 16-byte pointer alignment, so
every step sees the same alignment), in `FIELD_DTYPES` order. Block tables are always the full
`max_blocks_per_seq` wide, so the layout of a decode batch padded to `n` rows depends on `n` only: a
CUDA graph captured on those views reads the next step's inputs at the same addresses.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from formwork.core.forward_batch import FIELD_DTYPES, ForwardBatch, ForwardBatchError, host_arrays

ALIGN = 256
MAX_CACHED = 512  # layouts (distinct batch sizes) whose views are kept


def _aligned(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


class InputBuffers:
    """Staging buffers for batches of up to `max_tokens` tokens over up to `max_seqs` sequences."""

    def __init__(self, *, max_tokens: int, max_seqs: int, max_blocks_per_seq: int, block_size: int,
                 device: torch.device):
        self.max_tokens, self.max_seqs = max_tokens, max_seqs
        self.width, self.block_size = max_blocks_per_seq, block_size
        self.device = device
        capacity = self._layout(max_tokens, max_seqs, max_seqs)[1]
        on_cuda = device.type == "cuda"
        self.host = torch.empty(capacity, dtype=torch.uint8, pin_memory=on_cuda)
        self.device_buffer = (self.host if device.type == "cpu"
                              else torch.empty(capacity, dtype=torch.uint8, device=device))
        self._host_np = self.host.numpy()
        self._copied = torch.cuda.Event() if on_cuda else None  # the last copy out of `host` finished
        self.num_copies = 0
        self._cache: dict[tuple, tuple] = {}
        self._copy_slices: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # size -> (device, host) prefixes

    def _layout(self, num_tokens: int, num_seqs: int, num_logits: int) -> tuple[dict[str, tuple[int, tuple]], int]:
        """{field: (byte offset, shape)} and the total bytes, for a batch of these sizes."""
        shapes = {"input_ids": (num_tokens,), "positions": (num_tokens,), "slot_mapping": (num_tokens,),
                  "seq_lens": (num_seqs,), "query_start_loc": (num_seqs + 1,),
                  "block_tables": (num_seqs, self.width), "logits_indices": (num_logits,)}
        layout, offset = {}, 0
        for name, dtype in FIELD_DTYPES.items():
            offset = _aligned(offset)
            layout[name] = (offset, shapes[name])
            offset += math.prod(shapes[name]) * dtype.itemsize
        return layout, offset

    def pack(self, seqs: list[tuple[list[int], int, list[int]]], logits_for: list[bool],
             pad_to: int | None = None) -> ForwardBatch:
        """The batch of `ForwardBatch.build`, as views into the device buffer, after one host-to-device copy.
        `pad_to` pads a decode batch to that many rows (see `host_arrays`); the batch records it."""
        return self.pack_arrays(host_arrays(seqs, self.block_size, logits_for, table_width=self.width, pad_to=pad_to),
                                pad_to)

    def pack_arrays(self, arrays: dict[str, np.ndarray], pad_to: int | None = None) -> ForwardBatch:
        """`pack` of a batch's fields already built (`host_arrays`, `InputBatch.step_arrays`; block tables
        `max_blocks_per_seq` wide); `pad_to`: the rows a decode batch was padded to."""
        host_views, batch, size = self.staging(len(arrays["input_ids"]), len(arrays["seq_lens"]),
                                               len(arrays["logits_indices"]), pad_to)
        for name, view in host_views.items():
            view[...] = arrays[name]
        self.send(size)
        return batch

    def staging(self, num_tokens: int, num_seqs: int, num_logits: int, pad_to: int | None,
                ) -> tuple[dict[str, np.ndarray], ForwardBatch, int]:
        """(numpy views of the host fields to fill, the batch of device views, bytes to `send`) for these
        sizes, once the previous step's copy has finished reading the host buffer."""
        if num_tokens > self.max_tokens or num_seqs > self.max_seqs:
            raise ForwardBatchError(f"a batch of {num_tokens} tokens over {num_seqs} sequences exceeds the input "
                                    f"buffers ({self.max_tokens} tokens, {self.max_seqs} sequences)")
        staged = self._views(num_tokens, num_seqs, num_logits, pad_to)
        if self._copied is not None:
            self._copied.synchronize()  # the previous step's copy may still be reading `host`
        return staged

    def send(self, size: int) -> None:
        """Copy the first `size` bytes of the filled host buffer to the device buffer (nothing to copy on the
        CPU, where they are one buffer)."""
        if self.device_buffer is not self.host:
            slices = self._copy_slices.get(size)
            if slices is None:  # the buffers never move: each size's slices are made once
                if len(self._copy_slices) >= MAX_CACHED:
                    self._copy_slices.clear()
                slices = self._copy_slices[size] = (self.device_buffer[:size], self.host[:size])
            slices[0].copy_(slices[1], non_blocking=True)
        self.num_copies += 1
        if self._copied is not None:
            self._copied.record()

    def _views(self, num_tokens: int, num_seqs: int, num_logits: int, pad_to: int | None):
        """(numpy views of the host fields, the ForwardBatch of device views, bytes used) for these sizes;
        cached, since the buffers never move (at most `MAX_CACHED` layouts)."""
        key = (num_tokens, num_seqs, num_logits, pad_to)
        cached = self._cache.get(key)
        if cached is None:
            layout, size = self._layout(num_tokens, num_seqs, num_logits)
            host_views, device_views = {}, {}
            for name, (offset, shape) in layout.items():
                dtype = FIELD_DTYPES[name]
                nbytes = math.prod(shape) * dtype.itemsize
                host_views[name] = self._host_np[offset:offset + nbytes].view(_NUMPY[dtype]).reshape(shape)
                device_views[name] = self.device_buffer[offset:offset + nbytes].view(dtype).view(shape)
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            cached = self._cache[key] = (host_views, ForwardBatch(**device_views, decode_bucket=pad_to), size)
        return cached


_NUMPY = {torch.int64: "int64", torch.int32: "int32"}
