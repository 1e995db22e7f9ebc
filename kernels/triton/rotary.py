"""Triton rotary embedding (NeoX "rotate half"): one program per token rotates all of its query and key
heads in place, reading the step's cos/sin tables (`reference.rotary_tables`: made by torch once per step,
so the angles are torch's, not those of a GPU's fast cos/sin).

Rounds where the torch reference does: each product and the sum in the model dtype.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from formwork.kernels.launch import next_power_of_2, rotary_launch


@triton.jit
def _rotate_heads(ptr, row, cos, sin,
                  NUM_HEADS: tl.constexpr, HEAD_STRIDE: tl.constexpr, HALF: tl.constexpr,
                  BLOCK_H: tl.constexpr, BLOCK_HALF: tl.constexpr):
    heads = tl.arange(0, BLOCK_H)
    dims = tl.arange(0, BLOCK_HALF)
    mask = (heads < NUM_HEADS)[:, None] & (dims < HALF)[None, :]
    first = ptr + row + heads[:, None] * HEAD_STRIDE + dims[None, :]
    dtype = ptr.dtype.element_ty
    x1 = tl.load(first, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(first + HALF, mask=mask, other=0.0).to(tl.float32)
    out1 = (x1 * cos).to(dtype).to(tl.float32) - (x2 * sin).to(dtype).to(tl.float32)
    out2 = (x2 * cos).to(dtype).to(tl.float32) + (x1 * sin).to(dtype).to(tl.float32)
    tl.store(first, out1.to(dtype), mask=mask)
    tl.store(first + HALF, out2.to(dtype), mask=mask)


@triton.jit
def _rotary_kernel(
    cos_ptr, sin_ptr, query_ptr, key_ptr,
    TABLE_STRIDE: tl.constexpr,
    Q_STRIDE_T: tl.constexpr, Q_STRIDE_H: tl.constexpr, K_STRIDE_T: tl.constexpr, K_STRIDE_H: tl.constexpr,
    NUM_HEADS: tl.constexpr, NUM_KV_HEADS: tl.constexpr, HALF: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_HALF: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    dims = tl.arange(0, BLOCK_HALF)
    row = token * TABLE_STRIDE + dims  # a table row is [c, c]: its first half serves both halves
    cos = tl.load(cos_ptr + row, mask=dims < HALF, other=0.0).to(tl.float32)[None, :]
    sin = tl.load(sin_ptr + row, mask=dims < HALF, other=0.0).to(tl.float32)[None, :]
    _rotate_heads(query_ptr, token * Q_STRIDE_T, cos, sin, NUM_HEADS, Q_STRIDE_H, HALF, BLOCK_Q, BLOCK_HALF)
    _rotate_heads(key_ptr, token * K_STRIDE_T, cos, sin, NUM_KV_HEADS, K_STRIDE_H, HALF, BLOCK_K, BLOCK_HALF)


def rotary_embedding(query: torch.Tensor, key: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """Rotate ``[tokens, heads, head_dim]`` query and key (head_dim contiguous) in place by the cos/sin
    tables ``[tokens, 1, head_dim]`` (in the query dtype, head_dim contiguous)."""
    num_tokens, num_heads, head_dim = query.shape
    if num_tokens == 0:
        return
    num_kv_heads = key.shape[1]
    launch = rotary_launch(num_heads, num_kv_heads, head_dim)
    _rotary_kernel[(num_tokens,)](
        cos, sin, query, key, TABLE_STRIDE=cos.stride(0),
        Q_STRIDE_T=query.stride(0), Q_STRIDE_H=query.stride(1), K_STRIDE_T=key.stride(0), K_STRIDE_H=key.stride(1),
        NUM_HEADS=num_heads, NUM_KV_HEADS=num_kv_heads, HALF=head_dim // 2,
        BLOCK_Q=next_power_of_2(num_heads), BLOCK_K=next_power_of_2(num_kv_heads),
        BLOCK_HALF=next_power_of_2(head_dim // 2), num_warps=launch.num_warps,
    )
