"""The tensor-parallel group one model shard runs in, and the collectives the sharded layers use."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import Tensor

# A collective waits this long for the other ranks. Ranks only enter collectives together inside a step
# (an idle worker waits on its pipe instead), so this bounds a stuck step, never an idle engine.
COLLECTIVE_TIMEOUT = timedelta(minutes=5)


@dataclass(frozen=True)
class TensorParallelGroup:
    """This process's place in a tensor-parallel group of `size` ranks, whose collectives run on
    `device`. The default (rank 0 of 1) is a whole model in one process, where every collective is the
    identity; with `size > 1` they run on torch.distributed's default process group."""

    rank: int = 0
    size: int = 1
    device: str = "cpu"

    def all_reduce(self, x: Tensor) -> Tensor:
        """The sum of `x` over the ranks, in place."""
        if self.size > 1:
            dist.all_reduce(x)
        return x

    def gather_on_first(self, x: Tensor) -> list[Tensor] | None:
        """`x` of every rank in rank order on rank 0, None on the others (every rank's `x` has one shape)."""
        if self.size == 1:
            return [x]
        x = x.contiguous()
        parts = [torch.empty_like(x) for _ in range(self.size)] if self.rank == 0 else None
        dist.gather(x, parts, dst=0)
        return parts

    def any(self, flag: bool) -> bool:
        """Whether `flag` is true on any rank."""
        return self._reduce(int(flag), dist.ReduceOp.MAX) > 0

    def min(self, value: int) -> int:
        """The smallest of every rank's `value`."""
        return self._reduce(value, dist.ReduceOp.MIN)

    def _reduce(self, value: int, op: dist.ReduceOp) -> int:
        if self.size == 1:
            return value
        tensor = torch.tensor([value], dtype=torch.int64, device=self.device)
        dist.all_reduce(tensor, op=op)
        return int(tensor.item())


SINGLE = TensorParallelGroup()


def join_group(rank: int, size: int, store: dist.Store, device: str,
               timeout: timedelta = COLLECTIVE_TIMEOUT) -> TensorParallelGroup:
    """Join torch.distributed's default process group as `rank` of `size` (NCCL on CUDA, gloo on the
    CPU), meeting the other ranks through `store`. `timeout` bounds each collective."""
    backend = "nccl" if device.startswith("cuda") else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, store=store, rank=rank, world_size=size, timeout=timeout)
    return TensorParallelGroup(rank, size, device)
