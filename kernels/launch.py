"""Launch configurations of the Triton kernels, in plain Python (no triton import).

The Triton wrappers take their compile-time parameters from here, and `dispatch` derives from the same
functions a variant key per call: the kernel plus everything Triton compiles a separate binary for
(constexprs, dtypes, 16-byte pointer alignment; integer arguments that vary between steps are marked
`do_not_specialize` in the kernels). On the CPU the keys say which binaries a GPU would need.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from formwork.kernels.attention_tuning import AttentionTuning, current_tuning, default_splits, fit_shared_memory

MIN_BLOCK_M = 16            # attention: query rows per program (>= 16 for tl.dot)
PREFILL_BLOCK_M = 64
SAMPLE_MAX_BLOCK = 1024


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def aligned(*tensors: torch.Tensor) -> bool:
    """Whether every tensor's data starts on a 16-byte boundary (Triton specialises on it)."""
    return all(t.data_ptr() % 16 == 0 for t in tensors)


@dataclass(frozen=True)
class AttentionLaunch:
    block_q: int        # new tokens per program
    group_pad: int      # query heads per KV head, padded to a power of two
    num_splits: int     # KV splits (flash-decoding); 1 = none
    d_pad: int          # head_dim padded to a power of two >= 16
    fp32_dot: bool      # exact float32 dots (fp32 inputs, or bf16 under the interpreter)
    kv_tile: int        # KV positions per loop iteration
    num_warps: int
    num_stages: int


def attention_launch(query: torch.Tensor, k_cache: torch.Tensor, block_tables: torch.Tensor,
                     num_kv_splits: int | None = None, block_m: int | None = None,
                     tuning: AttentionTuning | None = None) -> AttentionLaunch:
    """Blocking, tiling and splits of one paged-attention call (64 query rows per program for prefill,
    16 for decode; KV tiles, warps, stages and splits from `tuning`, by default `current_tuning`), with
    `num_kv_splits` and `block_m` overriding the heuristics."""
    num_tokens, num_heads, head_dim = query.shape
    num_seqs = block_tables.shape[0]
    num_kv_heads = k_cache.shape[2]
    group_pad = next_power_of_2(num_heads // num_kv_heads)
    decode_only = num_tokens == num_seqs
    if tuning is None:
        tuning = current_tuning()
    if block_m is None:
        block_m = MIN_BLOCK_M if decode_only else PREFILL_BLOCK_M
    block_q = max(block_m, group_pad, MIN_BLOCK_M) // group_pad
    if num_kv_splits is None:
        # a decode batch has one useful program per (sequence, kv head)
        num_programs = (num_seqs if decode_only else num_tokens // block_q + num_seqs) * num_kv_heads
        max_context = block_tables.shape[1] * k_cache.shape[1]
        num_kv_splits = default_splits(tuning, decode_only, num_programs, max_context)
    fp32_dot = query.dtype == torch.float32 or (query.dtype == torch.bfloat16 and not query.is_cuda)
    d_pad = max(16, next_power_of_2(head_dim))
    kv_tile, num_warps, num_stages = tuning.phase(decode_only)
    tile_bytes = 2 * d_pad * (4 if fp32_dot else k_cache.element_size())  # K and V of one position
    kv_tile, num_stages = fit_shared_memory(kv_tile, num_stages, tile_bytes)
    return AttentionLaunch(block_q, group_pad, num_kv_splits, d_pad, fp32_dot, kv_tile, num_warps, num_stages)


def attention_key(query: torch.Tensor, k_cache: torch.Tensor, block_tables: torch.Tensor,
                  sliding_window: int | None, launch: AttentionLaunch | None = None) -> tuple:
    """The variant of a paged-attention call (`launch`: its `attention_launch`, when the caller has it)."""
    if launch is None:
        launch = attention_launch(query, k_cache, block_tables)
    return ("paged_attention", query.dtype, k_cache.dtype, k_cache.shape[1], query.shape[1], k_cache.shape[2],
            query.shape[2], sliding_window or 0, launch, aligned(query, k_cache, block_tables))


def kv_write_key(key: torch.Tensor, k_cache: torch.Tensor, slot_mapping: torch.Tensor) -> tuple:
    return ("write_kv_cache", k_cache.dtype, slot_mapping.dtype, key.shape[1], key.shape[2],
            aligned(key, k_cache, slot_mapping))


def sample_block(vocab_size: int) -> int:
    return min(SAMPLE_MAX_BLOCK, next_power_of_2(vocab_size))




SAMPLE_CHUNK = 4096         # split sampler: tokens per stage-1 program (64 x 129,280 logits: 2,048 programs)
SAMPLE_TOP_K_MAX = 128      # split sampler: largest top_k it draws itself (candidates kept per chunk)


@dataclass(frozen=True)
class SplitSampleLaunch:
    chunk: int          # tokens per stage-1 program
    num_chunks: int     # stage-1 programs per row
    chunks_pad: int     # num_chunks padded to a power of two (stage 2's vector of chunk results)
    top_k_max: int      # candidates kept per chunk; rows with a larger top_k stream their row in stage 2
    block: int          # the streaming fallback's block (`sample_block`)
    chunk_warps: int
    merge_warps: int


def split_sample_launch(vocab_size: int, chunk: int | None = None,
                        top_k_max: int | None = None) -> SplitSampleLaunch:
    """Blocking of the split sampler (`triton/sampling_split.py`): SAMPLE_CHUNK and SAMPLE_TOP_K_MAX unless
    overridden (powers of two, chunk >= top_k_max)."""
    chunk = chunk or SAMPLE_CHUNK
    top_k_max = top_k_max or SAMPLE_TOP_K_MAX
    num_chunks = -(-vocab_size // chunk)
    chunks_pad = next_power_of_2(num_chunks)
    return SplitSampleLaunch(chunk, num_chunks, chunks_pad, top_k_max, sample_block(vocab_size),
                             8 if chunk >= 4096 else 4, 8 if chunks_pad * top_k_max >= 4096 else 4)


def sample_key(logits: torch.Tensor, has_mask: bool) -> tuple:
    """The split sampler's kernels (whose streaming fallback is the one-program-per-row kernel's code)."""
    return ("sample", logits.dtype, has_mask, split_sample_launch(logits.shape[1]), aligned(logits))


def bitmask_key(logits: torch.Tensor, has_indices: bool) -> tuple:
    return ("apply_token_bitmask", logits.dtype, has_indices, aligned(logits))


# --- elementwise kernels (RMSNorm, SiLU-and-mul, rotary): one program per token row ------------------

ACTIVATION_BLOCK = 1024     # silu_and_mul: columns per program (programs tile the row)


@dataclass(frozen=True)
class RowLaunch:
    block: int          # elements per program: the row padded to a power of two (or a fixed tile)
    num_warps: int


def row_warps(block: int) -> int:
    """More warps for longer rows: 4 up to 1024 elements, 8 up to 4096, 16 beyond."""
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


@functools.lru_cache(maxsize=None)
def norm_launch(hidden_size: int) -> RowLaunch:
    block = next_power_of_2(hidden_size)
    return RowLaunch(block, row_warps(block))


@functools.lru_cache(maxsize=None)
def activation_launch(width: int) -> RowLaunch:
    block = min(ACTIVATION_BLOCK, next_power_of_2(width))
    return RowLaunch(block, row_warps(block))


@functools.lru_cache(maxsize=None)
def rotary_launch(num_heads: int, num_kv_heads: int, head_dim: int) -> RowLaunch:
    """Block of the [heads, head_dim // 2] half-tiles one program rotates (q or k, the larger)."""
    block = next_power_of_2(max(num_heads, num_kv_heads)) * next_power_of_2(head_dim // 2)
    return RowLaunch(block, row_warps(block))


def rms_norm_key(x: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor | None) -> tuple:
    operands = (x, weight) if residual is None else (x, weight, residual)
    return ("rms_norm", x.dtype, x.shape[-1], residual is not None, norm_launch(x.shape[-1]), aligned(*operands))


def silu_and_mul_key(gate_up: torch.Tensor) -> tuple:
    width = gate_up.shape[-1] // 2
    return ("silu_and_mul", gate_up.dtype, width, activation_launch(width), aligned(gate_up))


def rotary_key(query: torch.Tensor, key: torch.Tensor, cos: torch.Tensor) -> tuple:
    """Row and head strides are constexprs of the kernel (fixed per model: q/k are views of one qkv row),
    and so is the tables' row stride."""
    _, num_heads, head_dim = query.shape
    return ("rotary_embedding", query.dtype, num_heads, key.shape[1], head_dim, query.stride()[:2],
            key.stride()[:2], cos.stride(0), rotary_launch(num_heads, key.shape[1], head_dim),
            aligned(query, key, cos))
