"""How a Llama-family model splits over the ranks of a tensor-parallel group (Megatron-style).

Each rank holds a contiguous slice of every split dimension: its query heads, its KV heads (or one
replicated KV head when there are fewer KV heads than ranks), its columns of the MLP's intermediate
dimension and its rows of the vocabulary. `Shard` says where a parameter's slice lies in the checkpoint
tensor, so the loader reads only that slice.
"""

from __future__ import annotations

from dataclasses import dataclass

from formwork.core.config import ConfigError
from formwork.core.distributed.group import TensorParallelGroup


@dataclass(frozen=True)
class Shard:
    """A parameter's slice of a checkpoint tensor: `length` entries from `start` along `dim`, whose
    full size is `full` (the other dimensions are whole)."""

    dim: int
    start: int
    length: int
    full: int

    @classmethod
    def even(cls, dim: int, full: int, tp: TensorParallelGroup) -> "Shard":
        """Rank `tp.rank`'s equal part of a dimension of `full` entries (`full` divisible by `tp.size`)."""
        length = full // tp.size
        return cls(dim, tp.rank * length, length, full)


def vocab_shard(vocab_size: int, tp: TensorParallelGroup) -> tuple[Shard, int]:
    """This rank's vocabulary rows and the padded row count every rank allocates (ceil(vocab / size), so
    gathered logits line up; rows past the vocabulary are zero and cut off after the gather)."""
    padded = -(-vocab_size // tp.size)
    start = min(tp.rank * padded, vocab_size)
    return Shard(0, start, min(padded, vocab_size - start), vocab_size), padded


def kv_head_shard(num_kv_heads: int, tp: TensorParallelGroup) -> tuple[int, int]:
    """(first KV head, KV heads) of this rank: an equal part when the heads divide among the ranks,
    else the single head its query heads read (replicated on `size // num_kv_heads` ranks)."""
    if num_kv_heads >= tp.size:
        per_rank = num_kv_heads // tp.size
        return tp.rank * per_rank, per_rank
    return tp.rank // (tp.size // num_kv_heads), 1


def kv_heads_per_rank(num_kv_heads: int, tensor_parallel_size: int) -> int:
    """KV heads each rank's paged cache holds."""
    return kv_head_shard(num_kv_heads, TensorParallelGroup(0, tensor_parallel_size))[1]


def check_divisible(num_heads: int, num_kv_heads: int, intermediate_size: int, size: int) -> None:
    """Raise ConfigError unless the model splits `size` ways: query heads and the MLP's intermediate
    size divide evenly, and KV heads divide evenly or divide the rank count (then they are replicated)."""
    if size == 1:
        return
    problems = []
    if num_heads % size:
        problems.append(f"{num_heads} attention heads")
    if num_kv_heads % size and size % num_kv_heads:
        problems.append(f"{num_kv_heads} KV heads (neither a multiple nor a divisor of it)")
    if intermediate_size % size:
        problems.append(f"intermediate_size {intermediate_size}")
    if problems:
        raise ConfigError(f"tensor_parallel_size={size} does not divide this model's {', '.join(problems)}")
