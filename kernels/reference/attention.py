"""Torch reference: paged attention over a block-table KV pool (prefill, chunked prefill, decode).

On CPU the cost is moving K/V out of the pool, so each block is read once for all heads:
`index_select` on the block dim copies whole contiguous blocks ([block_size, kv_heads, head_dim]), and
the per-KV-head products run on strided views of that copy (GQA without repeating K/V).
Decode rows (one new token) are sorted by context length and batched in padded groups. For a float32
pool the probability-weighted sum of values is one `embedding_bag` straight from the pool (no V copy).
Sequences with several new tokens get one `scaled_dot_product_attention` call each (boolean causal /
window mask, GQA by `enable_gqa`). Scores and softmax are float32; the output has the query dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from formwork.kernels.errors import KernelInputError

DECODE_GROUP = 16  # decode sequences per padded batch


def paged_attention(
    query: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    block_tables: torch.Tensor,
    seq_lens: torch.Tensor,
    query_start_loc: torch.Tensor,
    scale: float,
    sliding_window: int | None = None,
) -> torch.Tensor:
    """Causal attention of each sequence's new tokens over its cached context; see the kernel contract."""
    out = torch.empty_like(query)
    lens = seq_lens.tolist()
    starts = query_start_loc.tolist()
    decode_seqs, prefill_seqs = [], []
    for seq, ctx_len in enumerate(lens):
        query_len = starts[seq + 1] - starts[seq]
        if query_len > ctx_len:
            raise KernelInputError(
                f"sequence {seq}: {query_len} new tokens but seq_lens={ctx_len} (must include them)"
            )
        if query_len == 1:
            decode_seqs.append(seq)
        elif query_len > 1:
            prefill_seqs.append(seq)
    # Decode rows sorted by context length and batched in groups, so padding stays small.
    decode_seqs.sort(key=lens.__getitem__)
    for first in range(0, len(decode_seqs), DECODE_GROUP):
        group = decode_seqs[first:first + DECODE_GROUP]
        _decode_batch(out, query, k_cache, v_cache, block_tables, lens, starts, group, scale, sliding_window)
    for seq in prefill_seqs:
        _prefill_one(out, query, k_cache, v_cache, block_tables[seq], lens[seq], starts[seq], starts[seq + 1],
                     scale, sliding_window)
    return out


def _block_ids(block_ids: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
    """Block table entries as int64 pool indices; entries past a sequence's end may be arbitrary."""
    return block_ids.long().clamp(0, cache.shape[0] - 1)


def _gather_blocks(cache: torch.Tensor, block_ids: torch.Tensor) -> torch.Tensor:
    """All heads of [..., n_blocks] pool blocks, one copy: [..., n_blocks * block_size, kv_heads, head_dim] fp32."""
    gathered = cache.index_select(0, block_ids.reshape(-1))
    return gathered.view(*block_ids.shape[:-1], -1, cache.shape[2], cache.shape[3]).float()


def _decode_batch(out, query, k_cache, v_cache, block_tables, lens, starts, seqs, scale, window) -> None:
    """Attention for sequences with exactly one new token, as one batch padded to the longest context."""
    device = query.device
    block_size, num_kv_heads, head_dim = k_cache.shape[1:]
    group = query.shape[1] // num_kv_heads
    batch = len(seqs)
    last_pos = [lens[s] - 1 for s in seqs]
    first_block = 0 if window is None else max(0, min(last_pos) - window + 1) // block_size
    end_block = max(last_pos) // block_size + 1
    tables = _block_ids(block_tables[torch.tensor(seqs, device=device), first_block:end_block], k_cache)
    pos = torch.arange(first_block * block_size, end_block * block_size, device=device)
    last = torch.tensor(last_pos, device=device).view(-1, 1, 1)
    blocked = pos > last  # [B, 1, N]
    if window is not None:
        blocked |= pos <= last - window
    rows = torch.tensor([starts[s] for s in seqs], device=device)
    q = (query.index_select(0, rows).float() * scale).view(batch, num_kv_heads, group, head_dim)
    keys = _gather_blocks(k_cache, tables)  # [B, N, KVH, D]
    scores = torch.empty(num_kv_heads, batch, group, pos.numel(), device=device)
    for head in range(num_kv_heads):
        torch.bmm(q[:, head], keys[:, :, head].transpose(1, 2), out=scores[head])
    probs = torch.softmax(scores.masked_fill_(blocked, float("-inf")), dim=-1)  # [KVH, B, G, N]
    result = _weighted_values(probs, v_cache, tables)  # [B, KVH, G, D]
    out.index_copy_(0, rows, result.reshape(batch, -1, head_dim).to(out.dtype))


def _weighted_values(probs: torch.Tensor, v_cache: torch.Tensor, tables: torch.Tensor) -> torch.Tensor:
    """sum_n probs[h, b, g, n] * V[b, n, h] for the padded positions of `tables` [B, n_blocks]: [B, KVH, G, D].

    A contiguous float32 pool is read in place by `embedding_bag` (one bag per (kv head, row, query
    head) over pool rows (slot, kv head)); other pools are gathered and upcast first.
    """
    num_kv_heads, batch, group, positions = probs.shape
    block_size, head_dim = v_cache.shape[1], v_cache.shape[3]
    device = probs.device
    if v_cache.dtype != torch.float32 or not v_cache.is_contiguous():
        values = _gather_blocks(v_cache, tables)  # [B, N, KVH, D]
        return torch.stack([torch.bmm(probs[head], values[:, :, head]) for head in range(num_kv_heads)], dim=1)
    slots = tables.unsqueeze(-1) * block_size + torch.arange(block_size, device=device)  # [B, n_blocks, bs]
    heads = torch.arange(num_kv_heads, device=device).view(-1, 1, 1, 1)
    rows = slots.view(1, batch, 1, positions) * num_kv_heads + heads
    rows = rows.expand(num_kv_heads, batch, group, positions).reshape(-1)
    offsets = torch.arange(0, rows.numel(), positions, device=device)
    summed = F.embedding_bag(rows, v_cache.view(-1, head_dim), offsets, mode="sum",
                             per_sample_weights=probs.reshape(-1))
    return summed.view(num_kv_heads, batch, group, head_dim).transpose(0, 1)


def _prefill_one(out, query, k_cache, v_cache, table, ctx_len, start, end, scale, window) -> None:
    """Attention for one sequence's several new tokens over its context (only blocks it can see)."""
    device = query.device
    block_size = k_cache.shape[1]
    query_len = end - start
    first_visible = 0 if window is None else max(0, ctx_len - query_len - window + 1)
    first_block = first_visible // block_size
    offset = first_block * block_size
    table = _block_ids(table[first_block:-(-ctx_len // block_size)], k_cache)
    q_pos = torch.arange(ctx_len - query_len, ctx_len, device=device).view(-1, 1)
    k_pos = torch.arange(offset, ctx_len, device=device).view(1, -1)
    allowed = k_pos <= q_pos  # [L, N]
    if window is not None:
        allowed &= k_pos > q_pos - window
    keys = _gather_blocks(k_cache, table)[: ctx_len - offset].transpose(0, 1)  # [KVH, N, D]
    values = _gather_blocks(v_cache, table)[: ctx_len - offset].transpose(0, 1)
    q = query[start:end].float().transpose(0, 1)  # [H, L, D]
    attended = F.scaled_dot_product_attention(q.unsqueeze(0), keys.unsqueeze(0), values.unsqueeze(0),
                                              attn_mask=allowed, scale=scale, enable_gqa=True)
    out[start:end] = attended[0].transpose(0, 1).to(out.dtype)
