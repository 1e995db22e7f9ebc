"""Torch reference: RMSNorm with an optional fused residual add, in HF Llama's order of operations."""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None
             ) -> torch.Tensor:
    """``weight * (h * rsqrt(mean(h**2) + eps)).to(dtype)`` with ``h`` the float32 rows of the input.

    With ``residual`` the input is ``residual + x`` (added in the model dtype), which is also written
    back into ``residual`` in place: the running residual stream of a decoder layer.
    """
    if residual is not None:
        x = residual.add_(x)
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)
