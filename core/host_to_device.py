"""Small host lists onto the device without making the host wait.

`torch.tensor(values, device="cuda")` copies from pageable memory, and such a copy returns only after all
the work queued before it on the stream has run (a step's forward, the previous step's sampling): the
host stalls and the GPU work of the next step is not launched ahead. Through pinned memory the copy is
queued like any kernel (the pinned block is kept until the copy has read it).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def tensor_on(values: Sequence[int] | Sequence[float], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """`values` as a 1-D `dtype` tensor on `device`, copied there without blocking on CUDA."""
    host = torch.tensor(values, dtype=dtype)
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def is_on(tensor: torch.Tensor, device: torch.device) -> bool:
    """`tensor` lives on `device` (a device without an index means the current one of its type)."""
    if device.index is None and device.type == "cuda":
        device = torch.device("cuda", torch.cuda.current_device())
    return tensor.device == device
