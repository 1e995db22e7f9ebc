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


def rotary_embedding(positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor, inv_freq: torch.Tensor,
                     scaling: float, tables: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """Rotate ``[tokens, heads, head_dim]`` query and key in place: ``x * cos + rotate_half(x) * sin``
    (``tables``: this step's `rotary_tables`, when made once for every layer)."""
    cos, sin = rotary_tables(positions, inv_freq, scaling, query.dtype) if tables is None else tables
    query.copy_(query * cos + _rotate_half(query) * sin)
    key.copy_(key * cos + _rotate_half(key) * sin)
