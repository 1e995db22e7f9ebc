"""Triton bitmask apply: each program writes -inf over one BLOCK-wide slice of one row's disallowed logits.

Write-only (logits are never read): the packed words of the slice are loaded, unpacked with shifts, and
-inf is stored where the bit is 0 or the token lies past the bitmask width.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _apply_bitmask_kernel(
    logits_ptr, bitmask_ptr, indices_ptr,
    vocab_size, num_words, logits_stride, bitmask_stride,
    HAS_INDICES: tl.constexpr,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    if HAS_INDICES:
        row = tl.load(indices_ptr + pid).to(tl.int64)
    else:
        row = pid.to(tl.int64)
    tokens = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    words = tokens // 32
    in_vocab = tokens < vocab_size
    packed = tl.load(bitmask_ptr + row * bitmask_stride + words, mask=in_vocab & (words < num_words), other=0)
    allowed = ((packed >> (tokens % 32)) & 1) != 0
    tl.store(logits_ptr + row * logits_stride + tokens, float("-inf"), mask=in_vocab & ~allowed)


def apply_token_bitmask(
    logits: torch.Tensor, bitmask: torch.Tensor, indices: torch.Tensor | None = None
) -> None:
    """In place: -inf where the token's bit is 0, for all rows or only `indices` rows."""
    batch, vocab = logits.shape
    if logits.stride(1) != 1:
        raise ValueError("logits must have a contiguous vocab dimension")
    bitmask = bitmask if bitmask.stride(1) == 1 else bitmask.contiguous()
    num_rows = batch if indices is None else indices.shape[0]
    if num_rows == 0 or vocab == 0:
        return
    grid = (num_rows, triton.cdiv(vocab, BLOCK))
    _apply_bitmask_kernel[grid](
        logits, bitmask, indices if indices is not None else bitmask,
        vocab, bitmask.shape[1], logits.stride(0), bitmask.stride(0),
        HAS_INDICES=indices is not None,
        BLOCK=BLOCK,
    )
