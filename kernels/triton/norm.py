"""Triton RMSNorm with an optional fused residual add: one program per token row.

Rounds where the torch reference rounds: the residual add in the model dtype, the normalised row in
float32 cast to the model dtype, then the product with the weight rounded again.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from formwork.kernels.launch import norm_launch


@triton.jit
def _rms_norm_kernel(
    x_ptr, residual_ptr, weight_ptr, out_ptr,
    eps,
    HIDDEN: tl.constexpr,
    BLOCK: tl.constexpr,
    HAS_RESIDUAL: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64) * HIDDEN
    cols = tl.arange(0, BLOCK)
    mask = cols < HIDDEN
    x = tl.load(x_ptr + row + cols, mask=mask, other=0.0)
    if HAS_RESIDUAL:
        x = (x.to(tl.float32) + tl.load(residual_ptr + row + cols, mask=mask, other=0.0).to(tl.float32))
        x = x.to(out_ptr.dtype.element_ty)
        tl.store(residual_ptr + row + cols, x, mask=mask)
    h = x.to(tl.float32)
    variance = tl.sum(h * h, axis=0) / HIDDEN
    normed = (h * tl.math.rsqrt(variance + eps)).to(out_ptr.dtype.element_ty)
    weight = tl.load(weight_ptr + cols, mask=mask, other=0.0)
    out = (weight.to(tl.float32) * normed.to(tl.float32)).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row + cols, out, mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, residual: torch.Tensor | None = None
             ) -> torch.Tensor:
    """RMSNorm of ``x`` [tokens, hidden]; with ``residual``, of ``residual + x``, stored into ``residual``."""
    num_tokens, hidden = x.shape
    x = x if x.is_contiguous() else x.contiguous()
    weight = weight if weight.is_contiguous() else weight.contiguous()
    out = torch.empty_like(x)
    if num_tokens == 0:
        return out
    launch = norm_launch(hidden)
    _rms_norm_kernel[(num_tokens,)](
        x, x if residual is None else residual, weight, out, eps,
        HIDDEN=hidden, BLOCK=launch.block, HAS_RESIDUAL=residual is not None, num_warps=launch.num_warps,
    )
    return out
