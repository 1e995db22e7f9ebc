"""Engine configuration: KV pool sizing, batching limits, feature switches."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

DEFAULT_KV_CACHE_MEMORY = 256 * 1024 * 1024  # bytes, used when neither budget nor block count is given


class ConfigError(ValueError):
    """An engine option has an invalid value."""


@dataclass
class EngineConfig:
    """Options of `LLMEngine` / `LLM` (vLLM names where they exist).

    `device="auto"` is CUDA when `torch.cuda.is_available()`, else the CPU; `"cuda"`/`"cuda:N"` without
    such a GPU is a ConfigError. `dtype="auto"` is the checkpoint's dtype (float16 becomes float32 on CPU).

    The KV pool is `num_gpu_blocks` blocks of `block_size` tokens when given, otherwise as many blocks as
    fit in `kv_cache_memory` bytes; failing both, on CUDA the blocks that fit in `gpu_memory_utilization`
    (default 0.9) of the GPU's total memory once weights and a profiled forward are counted (vLLM's
    meaning), on the CPU 256 MiB. Either way it is capped at what `max_num_seqs` full-length sequences
    can use. `gpu_memory_utilization` on the CPU is refused. `max_model_len=None` takes the model's `max_position_embeddings`. Without chunked
    prefill the per-step token budget is raised to `max_model_len` so any admissible prompt fits a step.

    Structured outputs: `enable_jump_forward` appends the tokens a grammar forces without sampling them
    (None: on unless decode steps replay CUDA graphs, since a row with several new tokens takes the whole
    step off its graph: on an H200, 64 schema-bound requests decoded at 5.6x the unconstrained per-token
    time with jumps and 1.06x without); `overlap_mask_fill` fills grammar masks on a thread while the
    forward runs (off by default: the masks are filled after the forward is launched, which on a GPU
    already overlaps it, and the thread's GIL hand-offs cost more than they hid: 1.26x vs 1.06x there);
    `grammar_compile_budget_s` and `grammar_step_budget_s` bound one compilation and one mask
    computation (running past one fails that request alone).

    Start-up: `warmup` runs every kernel variant once before serving (None: on for CUDA); `cuda_graphs`
    captures decode steps as CUDA graphs per padded batch size (None: on for CUDA; True on CPU is refused).

    `async_scheduling` schedules and launches step n+1 before step n's sampled tokens reach the host: the
    next step's input ids are read from the sampled tokens on the device, so the CPU's scheduling, input
    packing, output processing and mask filling run while the GPU computes (None: on for CUDA with one
    rank unless `enable_jump_forward` is True; it needs one token per step, so it turns jump-forward off, and
    True with jump-forward is refused).

    `cpu_threads` is torch's intra-op thread count for a forward on the CPU (ignored on CUDA). None keeps
    torch's count but leaves one core free when torch would use every core: the server's event loop and
    the grammar compile and mask threads run beside the forward, and an OpenMP team sharing its cores with
    them waits at every barrier (on 2 cores a trivial request's first token beside a running compile took
    0.9 s with 2 threads, 54 ms with 1).

    `tensor_parallel_size=N > 1` shards the model over N processes (`formwork.core.distributed`): on
    CUDA rank r uses cuda:r (N GPUs needed, device "cuda" or "auto"), on the CPU gloo over loopback.
    The KV budget above is each rank's (a rank's block holds its KV heads only). CUDA graphs are off with
    N > 1 (True is refused).
    """

    block_size: int = 16
    num_gpu_blocks: int | None = None
    kv_cache_memory: int | None = None
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None
    enable_prefix_caching: bool = True
    enable_chunked_prefill: bool = True
    dtype: str = "auto"
    device: str = "auto"
    gpu_memory_utilization: float | None = None
    cuda_graphs: bool | None = None
    warmup: bool | None = None
    seed: int = 0
    max_waiting_requests: int | None = None
    enable_jump_forward: bool | None = None
    async_scheduling: bool | None = None
    overlap_mask_fill: bool = False
    grammar_compile_budget_s: float = 10.0
    grammar_step_budget_s: float = 5.0
    tensor_parallel_size: int = 1
    cpu_threads: int | None = None

    def __post_init__(self) -> None:
        _positive_int("block_size", self.block_size)
        _positive_int("max_num_seqs", self.max_num_seqs)
        _positive_int("max_num_batched_tokens", self.max_num_batched_tokens)
        if self.num_gpu_blocks is not None:
            _positive_int("num_gpu_blocks", self.num_gpu_blocks)
        if self.kv_cache_memory is not None:
            _positive_int("kv_cache_memory", self.kv_cache_memory)
        if self.num_gpu_blocks is not None and self.kv_cache_memory is not None:
            raise ConfigError("give either num_gpu_blocks or kv_cache_memory, not both")
        if self.max_model_len is not None:
            _positive_int("max_model_len", self.max_model_len)
        if self.max_waiting_requests is not None:
            _positive_int("max_waiting_requests", self.max_waiting_requests)
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ConfigError(f"seed must be an int, got {self.seed!r}")
        if self.enable_jump_forward is not None and not isinstance(self.enable_jump_forward, bool):
            raise ConfigError(f"enable_jump_forward must be a bool or None, got {self.enable_jump_forward!r}")
        if self.async_scheduling is not None and not isinstance(self.async_scheduling, bool):
            raise ConfigError(f"async_scheduling must be a bool or None, got {self.async_scheduling!r}")
        if self.async_scheduling and self.enable_jump_forward:
            raise ConfigError("async_scheduling needs one new token per step: turn jump-forward off "
                              "(enable_jump_forward=False) or async scheduling off")
        if not isinstance(self.overlap_mask_fill, bool):
            raise ConfigError(f"overlap_mask_fill must be a bool, got {self.overlap_mask_fill!r}")
        for name in ("grammar_compile_budget_s", "grammar_step_budget_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.cpu_threads is not None:
            _positive_int("cpu_threads", self.cpu_threads)
        if self.dtype not in ("auto", "float32", "float16", "bfloat16"):
            raise ConfigError(f"dtype must be auto, float32, float16 or bfloat16, got {self.dtype!r}")
        self.device = resolve_device(self.device)
        self._check_gpu_options()
        self._check_tensor_parallel()

    def _check_gpu_options(self) -> None:
        on_cuda = self.device.startswith("cuda")
        for name in ("cuda_graphs", "warmup"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be a bool or None, got {getattr(self, name)!r}")
        if self.cuda_graphs and not on_cuda:
            raise ConfigError(f"cuda_graphs needs a CUDA device, but device is {self.device!r} "
                              "(use --no-cuda-graphs, or --device cuda on a GPU machine)")
        util = self.gpu_memory_utilization
        if util is None:
            return
        if isinstance(util, bool) or not isinstance(util, (int, float)) or not 0 < util <= 1:
            raise ConfigError(f"gpu_memory_utilization must be a fraction in (0, 1], got {util!r}")
        if not on_cuda:
            raise ConfigError(f"gpu_memory_utilization applies to CUDA devices, but device is {self.device!r}; "
                              "size the CPU KV cache with kv_cache_memory instead")
        if self.num_gpu_blocks is not None or self.kv_cache_memory is not None:
            raise ConfigError("give one of num_gpu_blocks, kv_cache_memory or gpu_memory_utilization, not several")

    def _check_tensor_parallel(self) -> None:
        size = self.tensor_parallel_size
        _positive_int("tensor_parallel_size", size)
        if size == 1:
            return
        if self.cuda_graphs:
            raise ConfigError("cuda_graphs with tensor_parallel_size > 1 is not supported (use --no-cuda-graphs)")
        if self.async_scheduling:
            raise ConfigError("async_scheduling with tensor_parallel_size > 1 is not supported "
                              "(use --no-async-scheduling)")
        if not self.on_cuda:
            return
        if self.device != "cuda":
            raise ConfigError(f"with tensor_parallel_size={size} give device 'cuda' or 'auto' (rank r uses "
                              f"cuda:r), not {self.device!r}")
        count = torch.cuda.device_count()
        if count < size:
            raise ConfigError(f"tensor_parallel_size={size} needs {size} CUDA devices; this machine has {count}")

    def rank_device(self, rank: int) -> str:
        """The device of tensor-parallel rank `rank`: cuda:rank on CUDA with several ranks, else `device`."""
        return f"cuda:{rank}" if self.on_cuda and self.tensor_parallel_size > 1 else self.device

    @property
    def on_cuda(self) -> bool:
        return self.device.startswith("cuda")

    @property
    def use_cuda_graphs(self) -> bool:
        """Whether decode steps replay CUDA graphs (default: on CUDA with one rank)."""
        if self.cuda_graphs is None:
            return self.on_cuda and self.tensor_parallel_size == 1
        return self.cuda_graphs

    @property
    def use_warmup(self) -> bool:
        """Whether the engine runs every kernel variant once at start-up (default: on CUDA)."""
        return self.on_cuda if self.warmup is None else self.warmup

    @property
    def sizes_kv_from_gpu_memory(self) -> bool:
        """True when the KV pool is sized from free GPU memory (CUDA, no explicit block count or bytes)."""
        return self.on_cuda and self.num_gpu_blocks is None and self.kv_cache_memory is None

    @property
    def use_async_scheduling(self) -> bool:
        """Whether step n+1 is launched before step n's tokens are read (default: on CUDA with one rank,
        unless jump-forward was asked for)."""
        if self.async_scheduling is None:
            return self.on_cuda and self.tensor_parallel_size == 1 and not self.enable_jump_forward
        return self.async_scheduling

    @property
    def use_jump_forward(self) -> bool:
        """Whether forced tokens are appended without sampling (default: unless CUDA graphs or async
        scheduling are used)."""
        if self.enable_jump_forward is None:
            return not (self.use_cuda_graphs or self.use_async_scheduling)
        return self.enable_jump_forward

    def resolve_cpu_threads(self) -> int | None:
        """Intra-op threads for a CPU forward (see the class docstring); None on CUDA (torch's as it is)."""
        if self.on_cuda:
            return None
        if self.cpu_threads is not None:
            return self.cpu_threads
        cores = os.cpu_count() or 1
        current = torch.get_num_threads()
        return max(1, cores - 1) if current >= cores else current

    def resolve_max_model_len(self, model_max_len: int) -> int:
        """The context limit: the option if set (it may not exceed the model's), else the model's."""
        if self.max_model_len is None:
            return model_max_len
        if self.max_model_len > model_max_len:
            raise ConfigError(
                f"max_model_len={self.max_model_len} exceeds the model's max_position_embeddings={model_max_len}"
            )
        return self.max_model_len

    def resolve_num_blocks(self, kv_bytes_per_block: int, max_model_len: int, gpu_budget: int | None = None) -> int:
        """Number of KV blocks in the pool: `num_gpu_blocks`, else `kv_cache_memory`, else `gpu_budget`
        (bytes left for the KV cache on the GPU, see `core.memory`), else 256 MiB."""
        if self.num_gpu_blocks is not None:
            return self.num_gpu_blocks
        if self.kv_cache_memory is not None or gpu_budget is None:
            budget = self.kv_cache_memory if self.kv_cache_memory is not None else DEFAULT_KV_CACHE_MEMORY
            source = f"kv_cache_memory={budget} bytes"
        else:
            budget = gpu_budget
            source = f"the GPU memory left for the KV cache ({max(budget, 0)} bytes)"
        num_blocks = budget // kv_bytes_per_block
        if num_blocks < 1:
            raise ConfigError(f"{source} is smaller than one KV block ({kv_bytes_per_block} bytes)")
        useful = self.max_num_seqs * math.ceil(max_model_len / self.block_size)
        return min(num_blocks, useful)

    def resolve_token_budget(self, max_model_len: int) -> int:
        """Per-step token budget; without chunked prefill a whole prompt must fit in one step."""
        if self.enable_chunked_prefill:
            return self.max_num_batched_tokens
        return max(self.max_num_batched_tokens, max_model_len)


def resolve_device(device: object) -> str:
    """"auto" -> "cuda" when a GPU is usable, else "cpu"; a named device is checked to exist."""
    if isinstance(device, torch.device):
        device = str(device)
    if not isinstance(device, str):
        raise ConfigError(f"device must be a string such as 'auto', 'cpu' or 'cuda', got {device!r}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise ConfigError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") from None
    if parsed.type == "cpu":
        return "cpu"
    if parsed.type != "cuda":
        raise ConfigError(f"device {device!r} is not supported; use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    if not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} was requested but CUDA is not available "
                          f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'})")
    count = torch.cuda.device_count()
    if parsed.index is not None and parsed.index >= count:
        raise ConfigError(f"device {device!r} does not exist: this machine has {count} CUDA device(s)")
    return str(parsed)


def _positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive int, got {value!r}")
