"""Triton SiLU-and-mul (SwiGLU's activation): programs tile each [gate | up] row in column blocks.

Rounds where torch does: silu(gate) computed in float32 and rounded to the dtype, then the product
with ``up`` rounded again.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from formwork.kernels.launch import activation_launch


@triton.jit
def _silu_and_mul_kernel(
    gate_up_ptr, out_ptr,
    WIDTH: tl.constexpr,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < WIDTH
    gate = tl.load(gate_up_ptr + row * (2 * WIDTH) + cols, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gate_up_ptr + row * (2 * WIDTH) + WIDTH + cols, mask=mask, other=0.0)
    silu = (gate / (1.0 + tl.exp(-gate))).to(out_ptr.dtype.element_ty)
    out = (silu.to(tl.float32) * up.to(tl.float32)).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * WIDTH + cols, out, mask=mask)


def silu_and_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """``silu(gate) * up`` [tokens, width] of ``gate_up`` [tokens, 2 * width]."""
    num_tokens, width = gate_up.shape[0], gate_up.shape[1] // 2
    gate_up = gate_up if gate_up.is_contiguous() else gate_up.contiguous()
    out = torch.empty(num_tokens, width, dtype=gate_up.dtype, device=gate_up.device)
    if num_tokens == 0 or width == 0:
        return out
    launch = activation_launch(width)
    grid = (num_tokens, triton.cdiv(width, launch.block))
    _silu_and_mul_kernel[grid](gate_up, out, WIDTH=width, BLOCK=launch.block, num_warps=launch.num_warps)
    return out
