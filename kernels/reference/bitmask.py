"""Torch reference: apply a packed int32 token bitmask to logits in place."""

from __future__ import annotations

import torch

_BIT_POSITIONS = torch.arange(32, dtype=torch.int32)


def unpack_bitmask(bitmask: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Bool [rows, vocab_size]: bit (j % 32) of word j // 32; positions past the mask width are False."""
    rows, words = bitmask.shape
    bits = (bitmask.unsqueeze(-1) >> _BIT_POSITIONS.to(bitmask.device)) & 1
    bits = bits.reshape(rows, words * 32).bool()
    if words * 32 >= vocab_size:
        return bits[:, :vocab_size]
    allowed = torch.zeros(rows, vocab_size, dtype=torch.bool, device=bitmask.device)
    allowed[:, : words * 32] = bits
    return allowed


def apply_token_bitmask(
    logits: torch.Tensor, bitmask: torch.Tensor, indices: torch.Tensor | None = None
) -> None:
    """Set disallowed logits to -inf; with `indices`, only those rows (of both tensors) are touched."""
    vocab_size = logits.shape[1]
    if indices is None:
        allowed = unpack_bitmask(bitmask, vocab_size)
        logits.masked_fill_(~allowed, float("-inf"))
        return
    rows = indices.to(device=logits.device, dtype=torch.long)
    allowed = unpack_bitmask(bitmask[rows.to(bitmask.device)].to(logits.device), vocab_size)
    logits[rows] = logits[rows].masked_fill(~allowed, float("-inf"))
