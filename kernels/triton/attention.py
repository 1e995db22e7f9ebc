"""Triton paged attention: one kernel for prefill, chunked prefill on a cached prefix, and decode.

Grid (query blocks, kv heads, kv splits). A program takes BLOCK_Q consecutive new tokens of one sequence
and all GROUP query heads that share one KV head (GQA/MQA), i.e. BLOCK_M = BLOCK_Q * GROUP_PAD query rows,
so each K/V tile read through the block table serves the whole group. The sequence of a query block is
found by binary search over query_start_loc (no host sync: the grid is the upper bound
num_tokens // BLOCK_Q + num_seqs, and surplus programs exit). KV tiles outside the causal/sliding-window
range of the block are never visited; the softmax is online (running max, sum, accumulator) in float32.
With NUM_SPLITS > 1 (flash-decoding: small decode batches over long contexts) each program covers a slice
of the KV tiles and writes a partial result; `_merge_splits_kernel` combines the slices by log-sum-exp.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from formwork.kernels.attention_tuning import AttentionTuning
from formwork.kernels.launch import AttentionLaunch, attention_launch


@triton.jit
def _find_seq(query_start_loc_ptr, num_seqs, q_block, BLOCK_Q: tl.constexpr):
    """Largest s with query_start_loc[s] // BLOCK_Q + s <= q_block (binary search)."""
    lo = tl.zeros([], tl.int32)
    hi = tl.zeros([], tl.int32) + num_seqs
    while lo < hi:
        mid = (lo + hi) // 2
        first_block = tl.load(query_start_loc_ptr + mid) // BLOCK_Q + mid
        go_right = first_block <= q_block
        lo = tl.where(go_right, mid + 1, lo)
        hi = tl.where(go_right, hi, mid)
    return lo - 1


@triton.jit(do_not_specialize=["num_seqs", "block_table_stride"])
def _paged_attention_kernel(
    query_ptr, k_cache_ptr, v_cache_ptr, out_ptr,
    partial_acc_ptr, partial_max_ptr, partial_sum_ptr,
    block_tables_ptr, seq_lens_ptr, query_start_loc_ptr,
    scale, num_seqs,
    q_stride_t, q_stride_h,
    cache_stride_b, cache_stride_o, cache_stride_h,
    block_table_stride,
    out_stride_t, out_stride_h,
    BLOCK_SIZE: tl.constexpr,
    HEAD_DIM: tl.constexpr,
    D_PAD: tl.constexpr,
    GROUP: tl.constexpr,
    GROUP_PAD: tl.constexpr,
    BLOCK_Q: tl.constexpr,
    KV_TILE: tl.constexpr,
    WINDOW: tl.constexpr,
    NUM_SPLITS: tl.constexpr,
    NUM_HEADS: tl.constexpr,
    FP32_DOT: tl.constexpr,
):
    q_block = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    BLOCK_M: tl.constexpr = BLOCK_Q * GROUP_PAD

    seq = _find_seq(query_start_loc_ptr, num_seqs, q_block, BLOCK_Q)
    q_start = tl.load(query_start_loc_ptr + seq)
    q_len = tl.load(query_start_loc_ptr + seq + 1) - q_start
    local_block = q_block - (q_start // BLOCK_Q + seq)
    if local_block * BLOCK_Q >= q_len:
        return
    seq_len = tl.load(seq_lens_ptr + seq)
    first_pos = seq_len - q_len  # position of the sequence's first new token

    rows = tl.arange(0, BLOCK_M)
    token = local_block * BLOCK_Q + rows // GROUP_PAD
    group_idx = rows % GROUP_PAD
    head = kv_head * GROUP + group_idx
    row_ok = (token < q_len) & (group_idx < GROUP)
    dims = tl.arange(0, D_PAD)
    dim_ok = dims < HEAD_DIM
    q_rows = (q_start + token).to(tl.int64)
    q = tl.load(query_ptr + q_rows[:, None] * q_stride_t + head[:, None] * q_stride_h + dims[None, :],
                mask=row_ok[:, None] & dim_ok[None, :], other=0.0)
    if FP32_DOT:
        q = q.to(tl.float32)
    q_pos = first_pos + token

    block_first_pos = first_pos + local_block * BLOCK_Q
    kv_end = tl.minimum(block_first_pos + BLOCK_Q, seq_len)  # exclusive: causal bound of the block
    kv_begin = 0
    if WINDOW > 0:
        kv_begin = tl.maximum(block_first_pos - WINDOW + 1, 0)
    num_tiles = tl.cdiv(kv_end - kv_begin, KV_TILE)
    tiles_per_split = tl.cdiv(num_tiles, NUM_SPLITS)
    tile_begin = split * tiles_per_split
    tile_end = tl.minimum(tile_begin + tiles_per_split, num_tiles)

    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D_PAD], tl.float32)
    table_row = block_tables_ptr + seq.to(tl.int64) * block_table_stride
    for tile in range(tile_begin, tile_end):
        # a tile spans KV_TILE // BLOCK_SIZE pages (or part of one): the block table is read per position
        pos = kv_begin + tile * KV_TILE + tl.arange(0, KV_TILE)
        pos_ok = pos < kv_end
        physical = tl.load(table_row + pos // BLOCK_SIZE, mask=pos_ok, other=0).to(tl.int64)
        slot = physical * cache_stride_b + (pos % BLOCK_SIZE) * cache_stride_o + kv_head * cache_stride_h
        if HEAD_DIM == D_PAD:
            kv_mask = pos_ok[:, None]  # constant along the head dim: vector loads
        else:
            kv_mask = pos_ok[:, None] & dim_ok[None, :]
        k = tl.load(k_cache_ptr + slot[:, None] + dims[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_cache_ptr + slot[:, None] + dims[None, :], mask=kv_mask, other=0.0)
        if FP32_DOT:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
            scores = tl.dot(q, tl.trans(k), input_precision="ieee")
        else:
            scores = tl.dot(q, tl.trans(k))
        allowed = pos_ok[None, :] & (pos[None, :] <= q_pos[:, None])
        if WINDOW > 0:
            allowed = allowed & (pos[None, :] > q_pos[:, None] - WINDOW)
        scores = tl.where(allowed, scores * scale, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        probs = tl.exp(scores - safe_max[:, None])
        rescale = tl.exp(row_max - safe_max)
        row_sum = row_sum * rescale + tl.sum(probs, axis=1)
        if FP32_DOT:
            acc = acc * rescale[:, None] + tl.dot(probs, v, input_precision="ieee")
        else:
            acc = acc * rescale[:, None] + tl.dot(probs.to(v.dtype), v)
        row_max = new_max

    store_mask = row_ok[:, None] & dim_ok[None, :]
    if NUM_SPLITS == 1:
        out = acc / tl.where(row_sum > 0, row_sum, 1.0)[:, None]
        tl.store(out_ptr + q_rows[:, None] * out_stride_t + head[:, None] * out_stride_h + dims[None, :],
                 out.to(out_ptr.dtype.element_ty), mask=store_mask)
    else:
        partial = (q_rows * NUM_HEADS + head) * NUM_SPLITS + split  # [tokens, heads, splits] layout
        tl.store(partial_acc_ptr + partial[:, None] * D_PAD + dims[None, :], acc, mask=store_mask)
        tl.store(partial_max_ptr + partial, row_max, mask=row_ok)
        tl.store(partial_sum_ptr + partial, row_sum, mask=row_ok)


@triton.jit
def _merge_splits_kernel(
    partial_acc_ptr, partial_max_ptr, partial_sum_ptr, out_ptr,
    out_stride_t, out_stride_h,
    HEAD_DIM: tl.constexpr,
    D_PAD: tl.constexpr,
    NUM_HEADS: tl.constexpr,
    NUM_SPLITS: tl.constexpr,
):
    """out = sum_s w_s acc_s / sum_s w_s l_s with w_s = exp(m_s - max_s m_s) (log-sum-exp merge)."""
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1)
    base = (token * NUM_HEADS + head) * NUM_SPLITS
    splits = tl.arange(0, NUM_SPLITS)
    dims = tl.arange(0, D_PAD)
    split_max = tl.load(partial_max_ptr + base + splits)
    split_sum = tl.load(partial_sum_ptr + base + splits)
    overall = tl.max(split_max, axis=0)
    weight = tl.where(split_max == float("-inf"), 0.0, tl.exp(split_max - overall))
    acc = tl.load(partial_acc_ptr + (base + splits)[:, None] * D_PAD + dims[None, :],
                  mask=(dims < HEAD_DIM)[None, :], other=0.0)
    out = tl.sum(acc * weight[:, None], axis=0) / tl.sum(split_sum * weight, axis=0)
    tl.store(out_ptr + token * out_stride_t + head * out_stride_h + dims, out.to(out_ptr.dtype.element_ty),
             mask=dims < HEAD_DIM)


def paged_attention(
    query: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    query_start_loc: torch.Tensor,
    scale: float,
    sliding_window: int | None = None,
    num_kv_splits: int | None = None,
    block_m: int | None = None,
    tuning: AttentionTuning | None = None,
    launch: AttentionLaunch | None = None,
) -> torch.Tensor:
    """Same contract as the torch reference. `num_kv_splits` (power of two) and `block_m` (query rows
    per program) override the heuristics of `launch.attention_launch` (`default_splits`, and 64 rows
    for prefill, 16 for decode); `tuning` replaces `attention_tuning.current_tuning` (KV tile, warps,
    stages, split heuristic); `launch` is the call's `attention_launch` already made (no overrides)."""
    num_tokens, num_heads, head_dim = query.shape
    num_seqs = block_tables.shape[0]
    num_kv_heads = k_cache.shape[2]
    if query.stride(-1) != 1:
        query = query.contiguous()
    if k_cache.stride() != v_cache.stride() or k_cache.stride(-1) != 1:
        raise ValueError("k_cache and v_cache must share strides with a contiguous head_dim")
    out = torch.empty(num_tokens, num_heads, head_dim, dtype=query.dtype, device=query.device)
    if num_tokens == 0:
        return out
    if num_kv_splits is not None and (num_kv_splits < 1 or num_kv_splits & (num_kv_splits - 1)):
        raise ValueError(f"num_kv_splits must be a power of two, got {num_kv_splits}")
    if launch is None:
        launch = attention_launch(query, k_cache, block_tables, num_kv_splits, block_m, tuning)
    num_kv_splits, d_pad = launch.num_splits, launch.d_pad
    num_q_blocks = num_tokens // launch.block_q + num_seqs
    partial_shape = (num_tokens, num_heads, num_kv_splits) if num_kv_splits > 1 else (1,)
    partial_acc = torch.empty(*partial_shape, d_pad, dtype=torch.float32, device=query.device)
    partial_max = torch.empty(partial_shape, dtype=torch.float32, device=query.device)
    partial_sum = torch.empty(partial_shape, dtype=torch.float32, device=query.device)
    _paged_attention_kernel[(num_q_blocks, num_kv_heads, num_kv_splits)](
        query, k_cache, v_cache, out,
        partial_acc, partial_max, partial_sum,
        block_tables, seq_lens, query_start_loc,
        scale, num_seqs,
        query.stride(0), query.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        block_tables.stride(0),
        out.stride(0), out.stride(1),
        BLOCK_SIZE=k_cache.shape[1],
        HEAD_DIM=head_dim,
        D_PAD=d_pad,
        GROUP=num_heads // num_kv_heads,
        GROUP_PAD=launch.group_pad,
        BLOCK_Q=launch.block_q,
        KV_TILE=launch.kv_tile,
        WINDOW=sliding_window or 0,
        NUM_SPLITS=num_kv_splits,
        NUM_HEADS=num_heads,
        # fp32 inputs use exact (non-tf32) dots; the interpreter's bf16 tl.dot is wrong, so on CPU
        # bf16 tiles are upcast too. fp16 (and bf16 on GPU) use native tensor-core dots.
        FP32_DOT=launch.fp32_dot,
        num_warps=launch.num_warps,
        num_stages=launch.num_stages,
    )
    if num_kv_splits > 1:
        _merge_splits_kernel[(num_tokens, num_heads)](
            partial_acc, partial_max, partial_sum, out,
            out.stride(0), out.stride(1),
            HEAD_DIM=head_dim, D_PAD=d_pad, NUM_HEADS=num_heads, NUM_SPLITS=num_kv_splits,
        )
    return out
