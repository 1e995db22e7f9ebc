"""formwork.kernels: KV-cache write, paged attention, bitmask apply and fused sampling.

Each op dispatches to Triton on CUDA tensors and to the torch reference otherwise;
`FORMWORK_KERNEL_BACKEND=triton|torch` forces one (see `dispatch.py`).
"""

from formwork.kernels.dispatch import (
    apply_token_bitmask,
    paged_attention,
    sample,
    select_backend,
    write_kv_cache,
)
from formwork.kernels.errors import KernelBackendError, KernelInputError
from formwork.kernels.sampling_tensors import SamplingTensors

__all__ = [
    "KernelBackendError",
    "KernelInputError",
    "SamplingTensors",
    "apply_token_bitmask",
    "paged_attention",
    "sample",
    "select_backend",
    "write_kv_cache",
]
