"""Per-row sampling parameters as tensors, the input of `formwork.kernels.sample`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from formwork.kernels.errors import KernelInputError


@dataclass
class SamplingTensors:
    """One entry per logits row.

    temperature: float32, 0 means greedy; top_k: int32, <= 0 means off; top_p: float32 in (0, 1],
    1.0 means off; min_p: float32 in [0, 1], 0.0 means off; seeds, steps: int64, the noise of a row
    is a function of (seed, step, token id) only.
    """

    temperature: torch.Tensor
    top_k: torch.Tensor
    top_p: torch.Tensor
    min_p: torch.Tensor
    seeds: torch.Tensor
    steps: torch.Tensor

    def __post_init__(self) -> None:
        expected = {
            "temperature": torch.float32,
            "top_k": torch.int32,
            "top_p": torch.float32,
            "min_p": torch.float32,
            "seeds": torch.int64,
            "steps": torch.int64,
        }
        batch = self.temperature.shape[0] if self.temperature.dim() == 1 else -1
        for name, dtype in expected.items():
            tensor = getattr(self, name)
            if not isinstance(tensor, torch.Tensor):
                raise KernelInputError(f"SamplingTensors.{name} must be a torch.Tensor, got {type(tensor)}")
            if tensor.dtype != dtype:
                raise KernelInputError(f"SamplingTensors.{name} must be {dtype}, got {tensor.dtype}")
            if tensor.dim() != 1 or tensor.shape[0] != batch:
                raise KernelInputError(
                    f"SamplingTensors.{name} must have shape [batch]={batch}, got {tuple(tensor.shape)}"
                )

    @property
    def batch_size(self) -> int:
        return self.temperature.shape[0]

    def to(self, device: torch.device | str) -> "SamplingTensors":
        """A copy with every tensor on `device` (non-blocking where possible)."""
        return SamplingTensors(
            *(getattr(self, name).to(device, non_blocking=True) for name in _FIELDS)
        )

    def select(self, rows: torch.Tensor) -> "SamplingTensors":
        """The parameters of the given row ids, in that order."""
        return SamplingTensors(*(getattr(self, name)[rows] for name in _FIELDS))

    @classmethod
    def from_lists(
        cls,
        temperature: Sequence[float],
        top_k: Sequence[int],
        top_p: Sequence[float],
        min_p: Sequence[float],
        seeds: Sequence[int],
        steps: Sequence[int],
        device: torch.device | str = "cpu",
    ) -> "SamplingTensors":
        """Build from Python lists, validating every value."""
        lists = {
            "temperature": list(temperature),
            "top_k": list(top_k),
            "top_p": list(top_p),
            "min_p": list(min_p),
            "seeds": list(seeds),
            "steps": list(steps),
        }
        sizes = {name: len(values) for name, values in lists.items()}
        if len(set(sizes.values())) != 1:
            raise KernelInputError(f"SamplingTensors lists differ in length: {sizes}")
        for row, t in enumerate(lists["temperature"]):
            if not t >= 0.0 or t == float("inf"):
                raise KernelInputError(f"temperature[{row}]={t} must be finite and >= 0")
        for row, p in enumerate(lists["top_p"]):
            if not 0.0 < p <= 1.0:
                raise KernelInputError(f"top_p[{row}]={p} must be in (0, 1]")
        for row, p in enumerate(lists["min_p"]):
            if not 0.0 <= p <= 1.0:
                raise KernelInputError(f"min_p[{row}]={p} must be in [0, 1]")
        for row, s in enumerate(lists["steps"]):
            if s < 0:
                raise KernelInputError(f"steps[{row}]={s} must be >= 0")
        return cls._packed(lists, torch.device(device))

    @classmethod
    def _packed(cls, lists: dict[str, list], device: torch.device) -> "SamplingTensors":
        """All six fields as views into one buffer, moved to `device` with a single copy."""
        offsets, offset = {}, 0
        for name in _FIELDS:
            offsets[name] = offset
            offset += -(-len(lists[name]) * _DTYPES[name].itemsize // _ALIGN) * _ALIGN
        host = torch.empty(max(offset, _ALIGN), dtype=torch.uint8)
        host_np = host.numpy()
        for name in _FIELDS:
            values = np.asarray(lists[name], dtype=_NUMPY[name])
            host_np[offsets[name]:offsets[name] + values.nbytes] = values.view(np.uint8)
        packed = host if device.type == "cpu" else host.to(device)
        batch = len(lists["temperature"])
        return cls(*(packed[offsets[name]:offsets[name] + batch * _DTYPES[name].itemsize].view(_DTYPES[name])
                     for name in _FIELDS))


_FIELDS = ("temperature", "top_k", "top_p", "min_p", "seeds", "steps")
_DTYPES = {"temperature": torch.float32, "top_k": torch.int32, "top_p": torch.float32, "min_p": torch.float32,
           "seeds": torch.int64, "steps": torch.int64}
_NUMPY = {name: str(dtype).removeprefix("torch.") for name, dtype in _DTYPES.items()}
_ALIGN = 16  # byte alignment of each field (Triton specialises kernels on 16-byte pointer alignment)
