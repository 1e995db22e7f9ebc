"""Torch reference: paged attention over a block-table KV pool (prefill, chunked prefill, decode).

Decode rows (one new token) are batched with padding, in groups of similar length; sequences with several new tokens get one pass
each. Work is done per KV head: gathering a head's blocks through the block table yields [.., positions,
head_dim] directly, so the score and value products are plain batched matmuls with no further copies
(the gather dominates on CPU). Scores and softmax are float32; the output has the query dtype.
"""

from __future__ import annotations

import torch

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


def _gather_head(cache: torch.Tensor, head: int, block_ids: torch.Tensor) -> torch.Tensor:
    """One KV head's positions for [..., n_blocks] block ids: [..., n_blocks * block_size, head_dim] float32."""
    block_ids = block_ids.long().clamp(0, cache.shape[0] - 1)
    gathered = cache[:, :, head][block_ids].float()
    return gathered.reshape(*block_ids.shape[:-1], -1, cache.shape[3])


def _decode_batch(out, query, k_cache, v_cache, block_tables, lens, starts, seqs, scale, window) -> None:
    """Attention for sequences with exactly one new token, as one padded batch."""
    device = query.device
    num_kv_heads = k_cache.shape[2]
    group = query.shape[1] // num_kv_heads
    rows = torch.tensor([starts[s] for s in seqs], device=device)
    last = torch.tensor([lens[s] - 1 for s in seqs], device=device).view(-1, 1, 1)
    num_blocks = -(-(int(last.max()) + 1) // k_cache.shape[1])
    tables = block_tables[torch.tensor(seqs, device=device), :num_blocks]
    pos = torch.arange(num_blocks * k_cache.shape[1], device=device).view(1, 1, -1)
    allowed = pos <= last
    if window is not None:
        allowed &= pos > last - window
    q = query[rows].float()  # [B, H, D]
    for head in range(num_kv_heads):
        heads = slice(head * group, (head + 1) * group)
        scores = torch.bmm(q[:, heads], _gather_head(k_cache, head, tables).transpose(1, 2)) * scale
        probs = torch.softmax(scores.masked_fill_(~allowed, float("-inf")), dim=-1)  # [B, G, N]
        out[rows, heads] = torch.bmm(probs, _gather_head(v_cache, head, tables)).to(out.dtype)


def _prefill_one(out, query, k_cache, v_cache, table, ctx_len, start, end, scale, window) -> None:
    """Attention for one sequence's several new tokens over its context (only blocks it can see)."""
    device = query.device
    block_size = k_cache.shape[1]
    num_kv_heads = k_cache.shape[2]
    query_len = end - start
    group = query.shape[1] // num_kv_heads
    first_visible = 0 if window is None else max(0, ctx_len - query_len - window + 1)
    first_block = first_visible // block_size
    offset = first_block * block_size
    table = table[first_block:-(-ctx_len // block_size)]
    q_pos = torch.arange(ctx_len - query_len, ctx_len, device=device).view(-1, 1)
    k_pos = torch.arange(offset, ctx_len, device=device).view(1, -1)
    allowed = k_pos <= q_pos
    if window is not None:
        allowed &= k_pos > q_pos - window
    q = query[start:end].float().transpose(0, 1)  # [H, L, D]
    for head in range(num_kv_heads):
        heads = slice(head * group, (head + 1) * group)
        keys = _gather_head(k_cache, head, table)[: ctx_len - offset]  # [N, D]
        values = _gather_head(v_cache, head, table)[: ctx_len - offset]
        scores = torch.matmul(q[heads], keys.t()) * scale  # [G, L, N]
        probs = torch.softmax(scores.masked_fill_(~allowed, float("-inf")), dim=-1)
        out[start:end, heads] = torch.matmul(probs, values).transpose(0, 1).to(out.dtype)
