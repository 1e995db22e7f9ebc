"""formwork.kernels: KV-cache write, paged attention, bitmask apply, fused sampling, and the model's fused
elementwise work (RMSNorm with residual add, SiLU-and-mul, rotary embedding).

Each op dispatches to Triton on CUDA tensors and to the torch reference otherwise;
`FORMWORK_KERNEL_BACKEND=triton|torch` forces one (see `dispatch.py`).
"""

from formwork.kernels.dispatch import (
    apply_token_bitmask,
    paged_attention,
    rms_norm,
    rotary_embedding,
    rotary_tables,
    sample,
    select_backend,
    silu_and_mul,
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
    "rms_norm",
    "rotary_embedding",
    "rotary_tables",
    "sample",
    "select_backend",
    "silu_and_mul",
    "write_kv_cache",
]
