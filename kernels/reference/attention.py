"""Torch reference: paged attention over a block-table KV pool (prefill, chunked prefill, decode).

Decode rows (one new token) are batched with padding; sequences with several new tokens are handled
one matmul per sequence. Scores and softmax are computed in float32; the output has the query dtype.
"""

from __future__ import annotations

import torch

from formwork.kernels.errors import KernelInputError


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
    if decode_seqs:
        _decode_batch(out, query, k_cache, v_cache, block_tables, lens, starts, decode_seqs, scale, sliding_window)
    for seq in prefill_seqs:
        _prefill_one(out, query, k_cache, v_cache, block_tables, lens[seq], starts[seq], starts[seq + 1],
                     seq, scale, sliding_window)
    return out


def _gather_context(cache: torch.Tensor, block_ids: torch.Tensor) -> torch.Tensor:
    """[..., n_blocks] block ids -> [..., n_blocks * block_size, kv_heads, head_dim] float32."""
    block_ids = block_ids.long().clamp(0, cache.shape[0] - 1)
    gathered = cache[block_ids].float()
    return gathered.reshape(*block_ids.shape[:-1], -1, cache.shape[2], cache.shape[3])


def _decode_batch(out, query, k_cache, v_cache, block_tables, lens, starts, seqs, scale, window) -> None:
    """Attention for sequences with exactly one new token, as one padded batch."""
    device = query.device
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    seq_ids = torch.tensor(seqs, device=device)
    rows = torch.tensor([starts[s] for s in seqs], device=device)
    ctx = torch.tensor([lens[s] for s in seqs], device=device)
    num_blocks = -(-max(lens[s] for s in seqs) // block_size)
    tables = block_tables[seq_ids, :num_blocks]
    keys = _gather_context(k_cache, tables)  # [B, N, Hkv, D]
    values = _gather_context(v_cache, tables)
    q = query[rows].float()  # [B, H, D]
    batch, num_heads, head_dim = q.shape
    q = q.view(batch, num_kv_heads, num_heads // num_kv_heads, head_dim)
    scores = torch.einsum("bkgd,bnkd->bkgn", q, keys) * scale
    pos = torch.arange(keys.shape[1], device=device)
    last = (ctx - 1).view(batch, 1)
    allowed = pos.view(1, -1) <= last
    if window is not None:
        allowed &= pos.view(1, -1) > last - window
    scores.masked_fill_(~allowed.view(batch, 1, 1, -1), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    result = torch.einsum("bkgn,bnkd->bkgd", probs, values)
    out[rows] = result.reshape(batch, num_heads, head_dim).to(out.dtype)


def _prefill_one(out, query, k_cache, v_cache, block_tables, ctx_len, start, end, seq, scale, window) -> None:
    """Attention for one sequence's several new tokens over its whole context."""
    device = query.device
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    q = query[start:end].float()
    query_len, num_heads, head_dim = q.shape
    # Only blocks that some new token can see: all of them, or from the first token's window start.
    first_visible = 0 if window is None else max(0, ctx_len - query_len - window + 1)
    first_block = first_visible // block_size
    table = block_tables[seq, first_block:-(-ctx_len // block_size)]
    offset = first_block * block_size
    keys = _gather_context(k_cache, table)[:ctx_len - offset]  # [N, Hkv, D]
    values = _gather_context(v_cache, table)[:ctx_len - offset]
    q = q.view(query_len, num_kv_heads, num_heads // num_kv_heads, head_dim)
    scores = torch.einsum("lkgd,nkd->kgln", q, keys) * scale
    q_pos = torch.arange(ctx_len - query_len, ctx_len, device=device).view(-1, 1)
    k_pos = torch.arange(offset, ctx_len, device=device).view(1, -1)
    allowed = k_pos <= q_pos
    if window is not None:
        allowed &= k_pos > q_pos - window
    scores.masked_fill_(~allowed, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    result = torch.einsum("kgln,nkd->lkgd", probs, values)
    out[start:end] = result.reshape(query_len, num_heads, head_dim).to(out.dtype)
