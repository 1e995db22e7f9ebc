"""Torch reference: rotary position embeddings (NeoX "rotate half") applied to query and key in place."""

from __future__ import annotations

import torch


def rotary_tables(positions: torch.Tensor, inv_freq: torch.Tensor, scaling: float, dtype: torch.dtype
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables [tokens, 1, head_dim] in ``dtype``, computed in float32 and scaled (HF's order)."""
    freqs = positions.to(torch.float32)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = (emb.cos() * scaling).to(dtype)
    sin = (emb.sin() * scaling).to(dtype)
    return cos[:, None, :], sin[:, None, :]


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotary_embedding(query: torch.Tensor, key: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    """Rotate ``[tokens, heads, head_dim]`` query and key in place by a step's `rotary_tables`:
    ``x * cos + rotate_half(x) * sin``."""
    query.copy_(query * cos + _rotate_half(query) * sin)
    key.copy_(key * cos + _rotate_half(key) * sin)
