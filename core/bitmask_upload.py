"""A step's packed grammar bitmask to the GPU without holding the host or queueing behind the forward.

The mask is filled on the host while the step's forward runs. Copied from pageable memory, `.to(cuda,
non_blocking=True)` returns only once the copy has run, and the copy is queued behind the forward on the
same stream: the host would wait for the whole forward before it could launch the sampling and go on to
the next step. From the pinned buffer `StructuredOutputManager` fills on CUDA, `BitmaskUpload` copies on a
side stream into a device buffer it keeps, and the sampling stream waits for that copy alone.

Reusing both buffers is safe because the host fills the next step's mask only after it has waited for
this step's sampling (the sampled tokens' read), and the sampling waited for this copy.
"""

from __future__ import annotations

import torch

from formwork.core.host_to_device import is_on


class BitmaskUpload:
    """Copies packed bitmasks [rows, words] to a device; on CUDA from pinned memory without blocking."""

    def __init__(self) -> None:
        self._device_rows: torch.Tensor | None = None
        self._stream: torch.cuda.Stream | None = None

    def __call__(self, bitmask: torch.Tensor, device: torch.device) -> torch.Tensor:
        """The bitmask on `device`, ready for work queued on its current stream after this call."""
        if device.type != "cuda" or not bitmask.is_pinned():
            return bitmask.to(device, non_blocking=True)
        target = self._target(bitmask.shape, device)
        with torch.cuda.stream(self._stream):
            target.copy_(bitmask, non_blocking=True)
            copied = self._stream.record_event()
        torch.cuda.current_stream(device).wait_event(copied)
        return target

    def _target(self, shape: torch.Size, device: torch.device) -> torch.Tensor:
        rows, words = shape
        buffer = self._device_rows
        if buffer is None or not is_on(buffer, device) or buffer.shape[1] != words or buffer.shape[0] < rows:
            buffer = self._device_rows = torch.empty((rows, words), dtype=torch.int32, device=device)
            self._stream = torch.cuda.Stream(device)
        return buffer[:rows]
