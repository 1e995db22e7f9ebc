"""Torch reference kernels: the engine's CPU path and the ground truth for the Triton kernels."""

from formwork.kernels.reference.activation import silu_and_mul
from formwork.kernels.reference.attention import paged_attention
from formwork.kernels.reference.bitmask import apply_token_bitmask
from formwork.kernels.reference.kv_cache import write_kv_cache
from formwork.kernels.reference.norm import rms_norm
from formwork.kernels.reference.rotary import rotary_embedding, rotary_tables
from formwork.kernels.reference.sampling import sample

__all__ = ["apply_token_bitmask", "paged_attention", "rms_norm", "rotary_embedding", "rotary_tables", "sample", "silu_and_mul",
           "write_kv_cache"]
