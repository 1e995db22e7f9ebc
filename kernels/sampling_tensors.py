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
            *(getattr(self, name).to(device, non_blocking=True) for name in FIELDS)
        )

    def select(self, rows: torch.Tensor) -> "SamplingTensors":
        """The parameters of the given row ids, in that order."""
        return SamplingTensors(*(getattr(self, name)[rows] for name in FIELDS))

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
        lists = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p, "seeds": seeds,
                 "steps": steps}
        sizes = {name: len(values) for name, values in lists.items()}
        if len(set(sizes.values())) != 1:
            raise KernelInputError(f"SamplingTensors lists differ in length: {sizes}")
        return cls.from_arrays(**{name: np.asarray(values, dtype=_CHECKED[name]) for name, values in lists.items()},
                               device=device)

    @classmethod
    def from_arrays(
        cls,
        temperature: np.ndarray,
        top_k: np.ndarray,
        top_p: np.ndarray,
        min_p: np.ndarray,
        seeds: np.ndarray,
        steps: np.ndarray,
        device: torch.device | str = "cpu",
    ) -> "SamplingTensors":
        """Build from 1-D numpy arrays of one length (floats checked before their float32 rounding),
        validating every value."""
        arrays = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "min_p": min_p, "seeds": seeds,
                  "steps": steps}
        check_arrays(arrays)
        device = torch.device(device)
        if device.type == "cpu":  # no copy to make: one tensor per field
            return cls(*(torch.from_numpy(np.asarray(arrays[name], dtype=NUMPY[name])) for name in FIELDS))
        return cls._packed(arrays, device)

    @classmethod
    def _packed(cls, arrays: dict[str, np.ndarray], device: torch.device) -> "SamplingTensors":
        """All six fields as views into one buffer, moved to `device` with a single copy (fields start on
        `_ALIGN`-byte boundaries). On CUDA the buffer is pinned and the copy does not block the host: from
        pageable memory it would wait for all work queued before it (a step's whole forward)."""
        batch = len(arrays["temperature"])
        offsets, offset = packed_layout(batch)
        host = torch.empty(offset, dtype=torch.uint8, pin_memory=device.type == "cuda")
        host_np = host.numpy()
        for name in FIELDS:
            start = offsets[name]
            host_np[start:start + batch * DTYPES[name].itemsize].view(NUMPY[name])[:] = arrays[name]
        packed = host if device.type == "cpu" else host.to(device, non_blocking=True)
        return cls(*(packed[offsets[name]:offsets[name] + batch * DTYPES[name].itemsize].view(DTYPES[name])
                     for name in FIELDS))


def check_arrays(arrays: dict[str, np.ndarray]) -> None:
    """Raise `KernelInputError` unless the six fields' arrays have one length and valid values (floats
    checked before their float32 rounding)."""
    sizes = {name: len(values) for name, values in arrays.items()}
    if len(set(sizes.values())) != 1:
        raise KernelInputError(f"SamplingTensors arrays differ in length: {sizes}")
    temperature, top_p, min_p, steps = (arrays[name] for name in ("temperature", "top_p", "min_p", "steps"))
    if not (sizes["temperature"] == 0 or (temperature.min() >= 0.0 and temperature.max() < np.inf
                                          and top_p.min() > 0.0 and top_p.max() <= 1.0
                                          and min_p.min() >= 0.0 and min_p.max() <= 1.0
                                          and steps.min() >= 0)):  # NaN fails every comparison
        _first_bad("temperature", temperature, ~(temperature >= 0.0) | (temperature == np.inf),
                   "must be finite and >= 0")
        _first_bad("top_p", top_p, ~((top_p > 0.0) & (top_p <= 1.0)), "must be in (0, 1]")
        _first_bad("min_p", min_p, ~((min_p >= 0.0) & (min_p <= 1.0)), "must be in [0, 1]")
        _first_bad("steps", steps, steps < 0, "must be >= 0")


def packed_layout(batch: int) -> tuple[dict[str, int], int]:
    """The byte offset of each field in one buffer of `batch` rows (each on an `_ALIGN`-byte boundary),
    and the buffer's size."""
    offsets, offset = {}, 0
    for name in FIELDS:
        offsets[name] = offset
        offset += -(-batch * DTYPES[name].itemsize // _ALIGN) * _ALIGN
    return offsets, max(offset, _ALIGN)


def _first_bad(name: str, values: np.ndarray, bad: np.ndarray, rule: str) -> None:
    """Raise naming the first row where `bad` holds."""
    if bad.any():
        row = int(np.argmax(bad))
        raise KernelInputError(f"{name}[{row}]={values[row]} {rule}")


FIELDS = ("temperature", "top_k", "top_p", "min_p", "seeds", "steps")
DTYPES = {"temperature": torch.float32, "top_k": torch.int32, "top_p": torch.float32, "min_p": torch.float32,
           "seeds": torch.int64, "steps": torch.int64}
NUMPY = {name: str(dtype).removeprefix("torch.") for name, dtype in DTYPES.items()}
# dtypes values are checked in: floats before their float32 rounding, integers as given
_CHECKED = {"temperature": np.float64, "top_k": np.int64, "top_p": np.float64, "min_p": np.float64,
            "seeds": np.int64, "steps": np.int64}
_ALIGN = 16  # byte alignment of each field (Triton specialises kernels on 16-byte pointer alignment)
