"""Torch reference kernels: the engine's CPU path and the ground truth for the Triton kernels."""

from formwork.kernels.reference.attention import paged_attention
from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.kv_cache import write_kv_cache
from formwork.kernels.reference.sampling import sample

__all__ = ["apply_token_bitmask", "paged_attention", "sample", "write_kv_cache"]
