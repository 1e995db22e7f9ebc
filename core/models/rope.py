"""Rotary position embeddings (NeoX "rotate half" layout) with the rope scalings Llama-family configs use.

Supported ``rope_type`` values: ``default``, ``linear``, ``llama3`` (Llama 3.1/3.2), ``yarn`` (Qwen2.5 long
context). ``dynamic`` NTK is not supported: its frequencies depend on the longest sequence in a batch, which
would make a request's output depend on its batch neighbours.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from formwork import kernels

SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3", "yarn")


class UnsupportedRopeError(ValueError):
    """The config asks for a rope scaling this engine does not implement."""


def rope_parameters(hf_config) -> dict:
    """The rope settings of a config as one dict (transformers >= 5 ``rope_parameters`` or the older
    ``rope_theta`` + ``rope_scaling`` pair)."""
    params = dict(getattr(hf_config, "rope_parameters", None) or {})
    if not params:
        params = dict(getattr(hf_config, "rope_scaling", None) or {})
        params.setdefault("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
    params.setdefault("rope_theta", 10000.0)
    params["rope_type"] = params.get("rope_type") or params.get("type") or "default"
    return params


def _base_inv_freq(dim: int, base: float) -> torch.Tensor:
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float32) / dim))


def _llama3_inv_freq(inv_freq: torch.Tensor, p: dict) -> torch.Tensor:
    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    old_len = p["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old_len / low, old_len / high
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    is_medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(is_medium, smoothed, scaled)


def _yarn_inv_freq(dim: int, base: float, p: dict, max_positions: int) -> tuple[torch.Tensor, float]:
    original = p["original_max_position_embeddings"]
    factor = p.get("factor") or max_positions / original

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention_factor = p.get("attention_factor")
    if attention_factor is None:
        if p.get("mscale") and p.get("mscale_all_dim"):
            attention_factor = mscale(factor, p["mscale"]) / mscale(factor, p["mscale_all_dim"])
        else:
            attention_factor = mscale(factor)
    beta_fast, beta_slow = p.get("beta_fast") or 32, p.get("beta_slow") or 1

    def correction_dim(rotations: float) -> float:
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(torch.float32) / dim)
    extrapolation, interpolation = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
    keep = 1 - ramp
    return interpolation * (1 - keep) + extrapolation * keep, float(attention_factor)


def compute_inv_freq(head_dim: int, params: dict, max_positions: int) -> tuple[torch.Tensor, float]:
    """Inverse frequencies [head_dim // 2] (float32) and the cos/sin scale for a rope config."""
    rope_type, base = params["rope_type"], float(params["rope_theta"])
    dim = int(head_dim * params.get("partial_rotary_factor", 1.0))
    if dim != head_dim:
        raise UnsupportedRopeError("partial rotary embeddings (partial_rotary_factor < 1) are not supported")
    if rope_type == "default":
        return _base_inv_freq(dim, base), 1.0
    if rope_type == "linear":
        return _base_inv_freq(dim, base) / params["factor"], 1.0
    if rope_type == "llama3":
        return _llama3_inv_freq(_base_inv_freq(dim, base), params), 1.0
    if rope_type == "yarn":
        return _yarn_inv_freq(dim, base, params, max_positions)
    raise UnsupportedRopeError(
        f"rope_type {rope_type!r} is not supported; supported: {', '.join(SUPPORTED_ROPE_TYPES)}")


class RotaryEmbedding(torch.nn.Module):
    """Rotates flat ``[tokens, heads, head_dim]`` query/key tensors in place by position
    (`kernels.rotary_embedding`: cos/sin computed in float32 and scaled, as HF does)."""

    def __init__(self, head_dim: int, params: dict, max_positions: int, device: torch.device | str = "cpu"):
        super().__init__()
        inv_freq, self.attention_scaling = compute_inv_freq(head_dim, params, max_positions)
        self.inv_freq = inv_freq.to(device)  # plain attribute: never cast to the model dtype

    def step(self, positions: torch.Tensor, dtype: torch.dtype) -> Callable[[torch.Tensor, torch.Tensor], None]:
        """What rotates a step's query and key (``rotate(q, k)``, in place) in every layer: the cos/sin
        tables of `positions` are made here, once for all layers."""
        cos, sin = kernels.rotary_tables(positions, self.inv_freq, self.attention_scaling, dtype)
        return lambda query, key: kernels.rotary_embedding(query, key, cos, sin)
