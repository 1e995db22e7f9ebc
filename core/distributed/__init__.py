"""Tensor parallelism on torch.distributed: the group a sharded model runs in (`group`), the worker
processes of ranks 1..N-1 (`worker`) and rank 0's runner that drives them in lockstep (`runner`)."""
