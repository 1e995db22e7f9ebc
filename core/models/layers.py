"""Building blocks shared by the Llama-family models, split Megatron-style over a tensor-parallel group
(`sharding`): column- and row-parallel linear layers, RMSNorm, SwiGLU, a vocabulary-parallel embedding
that doubles as the lm_head. With one rank each is the plain layer. Parameters are allocated
uninitialised (``torch.empty``): the loader fills every one of them from the checkpoint (``shard_of``
says which slice of which checkpoint tensor), so random initialisation would be wasted work."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from formwork import kernels
from formwork.core.distributed.group import TensorParallelGroup
from formwork.core.models.sharding import Shard, vocab_shard


class WeightShapeError(ValueError):
    """A checkpoint tensor does not have the shape of the parameter (slice) it is loaded into."""


def _empty(*shape: int, dtype: torch.dtype, device) -> nn.Parameter:
    return nn.Parameter(torch.empty(*shape, dtype=dtype, device=device), requires_grad=False)


def copy_checked(target: torch.Tensor, tensor: torch.Tensor) -> None:
    """Copy ``tensor`` into ``target`` (casting dtype/device) after checking the shapes agree."""
    if tuple(tensor.shape) != tuple(target.shape):
        raise WeightShapeError(f"checkpoint shape {tuple(tensor.shape)} != expected {tuple(target.shape)}")
    target.copy_(tensor)


class ColumnParallelLinear(nn.Module):
    """Linear layers over the same input fused into one matmul (q/k/v, gate/up), split by output rows
    over the tensor-parallel ranks: part ``name`` holds rows ``shards[name]`` of the checkpoint's
    ``name`` weight. The output stays split; a `RowParallelLinear` consumes it."""

    def __init__(self, in_features: int, shards: dict[str, Shard], bias: bool, *, dtype: torch.dtype, device):
        super().__init__()
        self.shards = dict(shards)
        self.out_sizes = [shard.length for shard in self.shards.values()]
        self.offsets = dict(zip(self.shards, (sum(self.out_sizes[:i]) for i in range(len(self.shards)))))
        self.weight = _empty(sum(self.out_sizes), in_features, dtype=dtype, device=device)
        self.bias = _empty(sum(self.out_sizes), dtype=dtype, device=device) if bias else None

    @property
    def shard_names(self) -> list[str]:
        """Checkpoint names of the fused parts (e.g. ``q_proj``), in output order."""
        return list(self.shards)

    def shard_of(self, param_name: str, part: str | None) -> tuple[torch.Tensor, Shard]:
        """Where checkpoint part ``part``'s ``param_name`` ("weight" or "bias") goes, and its slice."""
        param = self.weight if param_name == "weight" else self.bias
        if param is None:
            raise WeightShapeError(f"the model has no {param_name} for this layer")
        shard = self.shards[part]
        return param.data.narrow(0, self.offsets[part], shard.length), shard

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)

    def split(self, y: torch.Tensor) -> list[torch.Tensor]:
        return list(y.split(self.out_sizes, dim=-1))


class RowParallelLinear(nn.Module):
    """``y = x W^T + b`` split by input columns over the ranks: each rank multiplies its slice of the
    (split) input by its columns of ``W``, one all-reduce sums the parts, then the bias is added once."""

    def __init__(self, in_features: int, out_features: int, bias: bool, tp: TensorParallelGroup, *,
                 dtype: torch.dtype, device):
        super().__init__()
        self.tp = tp
        self.columns = Shard.even(1, in_features, tp)
        self.weight = _empty(out_features, self.columns.length, dtype=dtype, device=device)
        self.bias = _empty(out_features, dtype=dtype, device=device) if bias else None

    def shard_of(self, param_name: str, part: str | None) -> tuple[torch.Tensor, Shard | None]:
        if param_name == "weight":
            return self.weight.data, self.columns
        return self.bias.data, None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tp.size == 1:
            return F.linear(x, self.weight, self.bias)
        y = self.tp.all_reduce(F.linear(x, self.weight))
        return y if self.bias is None else y + self.bias


class RMSNorm(nn.Module):
    """RMSNorm computed in float32 and cast back, with HF Llama's exact order of operations
    (`kernels.rms_norm`); given the residual stream it first adds the input into it, in place."""

    def __init__(self, hidden_size: int, eps: float, *, dtype: torch.dtype, device):
        super().__init__()
        self.weight = _empty(hidden_size, dtype=dtype, device=device)
        self.eps = eps

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        return kernels.rms_norm(x, self.weight, self.eps, residual)


class SwiGLUMLP(nn.Module):
    """``down(silu(gate(x)) * up(x))``: gate and up fused into one column-parallel matmul, down row-parallel."""

    def __init__(self, hidden_size: int, intermediate_size: int, bias: bool, tp: TensorParallelGroup, *,
                 dtype: torch.dtype, device):
        super().__init__()
        columns = Shard.even(0, intermediate_size, tp)
        self.gate_up_proj = ColumnParallelLinear(hidden_size, {"gate_proj": columns, "up_proj": columns}, bias,
                                                 dtype=dtype, device=device)
        self.down_proj = RowParallelLinear(intermediate_size, hidden_size, bias, tp, dtype=dtype, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(kernels.silu_and_mul(self.gate_up_proj(x)))


class VocabParallelEmbedding(nn.Module):
    """Token embedding table [vocab_size, hidden_size] split by rows (tokens) over the ranks; doubles as
    the (tied or own) lm_head. Each rank allocates the same padded row count (`vocab_shard`)."""

    def __init__(self, vocab_size: int, hidden_size: int, tp: TensorParallelGroup, *, dtype: torch.dtype, device):
        super().__init__()
        self.tp, self.vocab_size = tp, vocab_size
        self.rows, padded = vocab_shard(vocab_size, tp)
        self.weight = _empty(padded, hidden_size, dtype=dtype, device=device)
        self.weight.data[self.rows.length:].zero_()

    def shard_of(self, param_name: str, part: str | None) -> tuple[torch.Tensor, Shard]:
        return self.weight.data.narrow(0, 0, self.rows.length), self.rows

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        if self.tp.size == 1:
            return F.embedding(input_ids, self.weight)
        local = input_ids - self.rows.start
        mine = (local >= 0) & (local < self.rows.length)
        hidden = F.embedding(torch.where(mine, local, 0), self.weight) * mine.unsqueeze(-1).to(self.weight.dtype)
        return self.tp.all_reduce(hidden)

    def logits(self, hidden: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor | None:
        """float32 logits [rows, vocab_size] of ``hidden`` against this table, gathered on rank 0 (None on
        the other ranks); written into ``out`` when given (one rank only: the cast is the copy)."""
        if out is not None:
            if self.tp.size != 1:
                raise ValueError("logits into a buffer need a single rank")
            return out.copy_(F.linear(hidden, self.weight)[:, :self.vocab_size])
        parts = self.tp.gather_on_first(F.linear(hidden, self.weight))
        if parts is None:
            return None
        logits = parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)[:, :self.vocab_size]
        return logits.float()
