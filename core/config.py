"""Engine configuration: KV pool sizing, batching limits, feature switches."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_KV_CACHE_MEMORY = 256 * 1024 * 1024  # bytes, used when neither budget nor block count is given


class ConfigError(ValueError):
    """An engine option has an invalid value."""


@dataclass
class EngineConfig:
    """Options of `LLMEngine` / `LLM` (vLLM names where they exist).

    The KV pool is `num_gpu_blocks` blocks of `block_size` tokens when given, otherwise as many blocks as
    fit in `kv_cache_memory` bytes (default 256 MiB), capped at what `max_num_seqs` full-length
    sequences can use. `max_model_len=None` takes the model's `max_position_embeddings`. Without chunked
    prefill the per-step token budget is raised to `max_model_len` so any admissible prompt fits a step.

    Structured outputs: `enable_jump_forward` appends the tokens a grammar forces without sampling them;
    `overlap_mask_fill` fills grammar masks on a thread while the forward runs (None: on for CUDA);
    `grammar_compile_budget_s` and `grammar_step_budget_s` bound one compilation and one mask
    computation (running past one fails that request alone).
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
    device: str = "cpu"
    seed: int = 0
    max_waiting_requests: int | None = None
    enable_jump_forward: bool = True
    overlap_mask_fill: bool | None = None
    grammar_compile_budget_s: float = 10.0
    grammar_step_budget_s: float = 5.0

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
        if not isinstance(self.enable_jump_forward, bool):
            raise ConfigError(f"enable_jump_forward must be a bool, got {self.enable_jump_forward!r}")
        if self.overlap_mask_fill is not None and not isinstance(self.overlap_mask_fill, bool):
            raise ConfigError(f"overlap_mask_fill must be a bool or None, got {self.overlap_mask_fill!r}")
        for name in ("grammar_compile_budget_s", "grammar_step_budget_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.dtype not in ("auto", "float32", "float16", "bfloat16"):
            raise ConfigError(f"dtype must be auto, float32, float16 or bfloat16, got {self.dtype!r}")

    @property
    def mask_fill_overlaps(self) -> bool:
        """Whether grammar masks are filled on a thread during the forward (default: on CUDA only)."""
        if self.overlap_mask_fill is not None:
            return self.overlap_mask_fill
        return str(self.device).startswith("cuda")

    def resolve_max_model_len(self, model_max_len: int) -> int:
        """The context limit: the option if set (it may not exceed the model's), else the model's."""
        if self.max_model_len is None:
            return model_max_len
        if self.max_model_len > model_max_len:
            raise ConfigError(
                f"max_model_len={self.max_model_len} exceeds the model's max_position_embeddings={model_max_len}"
            )
        return self.max_model_len

    def resolve_num_blocks(self, kv_bytes_per_block: int, max_model_len: int) -> int:
        """Number of KV blocks in the pool (from `num_gpu_blocks` or the memory budget)."""
        if self.num_gpu_blocks is not None:
            return self.num_gpu_blocks
        budget = self.kv_cache_memory if self.kv_cache_memory is not None else DEFAULT_KV_CACHE_MEMORY
        num_blocks = budget // kv_bytes_per_block
        if num_blocks < 1:
            raise ConfigError(
                f"kv_cache_memory={budget} bytes is smaller than one KV block ({kv_bytes_per_block} bytes)"
            )
        useful = self.max_num_seqs * math.ceil(max_model_len / self.block_size)
        return min(num_blocks, useful)

    def resolve_token_budget(self, max_model_len: int) -> int:
        """Per-step token budget; without chunked prefill a whole prompt must fit in one step."""
        if self.enable_chunked_prefill:
            return self.max_num_batched_tokens
        return max(self.max_num_batched_tokens, max_model_len)


def _positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{name} must be a positive int, got {value!r}")
