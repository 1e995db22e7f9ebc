"""Building blocks shared by the Llama-family models: linear layers (plain and fused), RMSNorm, SwiGLU,
embeddings. Parameters are allocated uninitialised (``torch.empty``): the loader fills every one of them
from the checkpoint, so random initialisation would be wasted work."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class WeightShapeError(ValueError):
    """A checkpoint tensor does not have the shape of the parameter (slice) it is loaded into."""


def _empty(*shape: int, dtype: torch.dtype, device) -> nn.Parameter:
    return nn.Parameter(torch.empty(*shape, dtype=dtype, device=device), requires_grad=False)


def copy_checked(target: torch.Tensor, tensor: torch.Tensor) -> None:
    """Copy ``tensor`` into ``target`` (casting dtype/device) after checking the shapes agree."""
    if tuple(tensor.shape) != tuple(target.shape):
        raise WeightShapeError(f"checkpoint shape {tuple(tensor.shape)} != expected {tuple(target.shape)}")
    target.copy_(tensor)


class Linear(nn.Module):
    """``y = x W^T + b`` with ``W`` stored as [out_features, in_features] like ``nn.Linear``."""

    def __init__(self, in_features: int, out_features: int, bias: bool, *, dtype: torch.dtype, device):
        super().__init__()
        self.weight = _empty(out_features, in_features, dtype=dtype, device=device)
        self.bias = _empty(out_features, dtype=dtype, device=device) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)


class MergedLinear(Linear):
    """Several linear layers over the same input fused into one matmul (q/k/v, gate/up).

    ``shard_names[i]`` is the checkpoint name of the i-th part (e.g. ``q_proj``), of ``out_sizes[i]`` rows.
    """

    def __init__(self, in_features: int, out_sizes: list[int], shard_names: list[str], bias: bool, *,
                 dtype: torch.dtype, device):
        super().__init__(in_features, sum(out_sizes), bias, dtype=dtype, device=device)
        self.out_sizes = list(out_sizes)
        self.shard_names = list(shard_names)
        self.offsets = [sum(out_sizes[:i]) for i in range(len(out_sizes))]

    def load_shard(self, shard_name: str, kind: str, tensor: torch.Tensor) -> None:
        """Copy the checkpoint tensor of part ``shard_name`` (``kind`` = "weight" or "bias") into place."""
        i = self.shard_names.index(shard_name)
        param = self.weight if kind == "weight" else self.bias
        if param is None:
            raise WeightShapeError(f"the model has no {kind} for this layer")
        copy_checked(param.data.narrow(0, self.offsets[i], self.out_sizes[i]), tensor)

    def split(self, y: torch.Tensor) -> list[torch.Tensor]:
        return list(y.split(self.out_sizes, dim=-1))


class RMSNorm(nn.Module):
    """RMSNorm computed in float32 and cast back, with HF Llama's exact order of operations."""

    def __init__(self, hidden_size: int, eps: float, *, dtype: torch.dtype, device):
        super().__init__()
        self.weight = _empty(hidden_size, dtype=dtype, device=device)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(input_dtype)


class SwiGLUMLP(nn.Module):
    """``down(silu(gate(x)) * up(x))`` with gate and up fused into one matmul."""

    def __init__(self, hidden_size: int, intermediate_size: int, bias: bool, *, dtype: torch.dtype, device):
        super().__init__()
        self.gate_up_proj = MergedLinear(hidden_size, [intermediate_size, intermediate_size],
                                         ["gate_proj", "up_proj"], bias, dtype=dtype, device=device)
        self.down_proj = Linear(intermediate_size, hidden_size, bias, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up_proj.split(self.gate_up_proj(x))
        return self.down_proj(F.silu(gate) * up)


class Embedding(nn.Module):
    """Token embedding table [vocab_size, hidden_size]; doubles as a tied lm_head."""

    def __init__(self, vocab_size: int, hidden_size: int, *, dtype: torch.dtype, device):
        super().__init__()
        self.weight = _empty(vocab_size, hidden_size, dtype=dtype, device=device)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(input_ids, self.weight)
