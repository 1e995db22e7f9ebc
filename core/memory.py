"""Sizing the KV pool from GPU memory (vLLM's `gpu_memory_utilization`: the fraction of the device's
total memory the engine may use; the KV cache gets what is left after the weights, the CUDA context,
other processes' memory and the peak activations of a profiled forward)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9


@dataclass(frozen=True)
class MemoryProfile:
    """What one device holds once the model is loaded, measured around a worst-case forward.

    total            the device's memory, bytes
    used             in use after the forward with the allocator's cache emptied (weights, CUDA context,
                     other processes: `total - free` from `cudaMemGetInfo`)
    activation_peak  the forward's peak allocation above what was allocated when it started
    """

    total: int
    used: int
    activation_peak: int


def kv_cache_budget(profile: MemoryProfile, utilization: float) -> int:
    """Bytes the KV cache may take: `utilization * total - used - activation_peak` (may be <= 0)."""
    return int(profile.total * utilization) - profile.used - profile.activation_peak


def profile_cuda_memory(device: torch.device, run_forward: Callable[[], None]) -> MemoryProfile:
    """Run `run_forward` (the largest step the engine will schedule) and measure the device's memory."""
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    run_forward()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info(device)
    return MemoryProfile(total=total, used=total - free, activation_peak=max(peak - start, 0))
