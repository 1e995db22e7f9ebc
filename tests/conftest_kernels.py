"""Input builders and float64 ground truth shared by the kernel tests (imported explicitly).

`make_paged_case` lays random K/V of several sequences into a shuffled paged pool and returns both the
paged tensors and the dense per-sequence K/V, so attention can be checked against a dense float64 computation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PagedCase:
    query: torch.Tensor            # [tokens, heads, head_dim]
    k_cache: torch.Tensor          # [blocks, block_size, kv_heads, head_dim]
    v_cache: torch.Tensor
    block_tables: torch.Tensor     # int32 [seqs, max_blocks]
    seq_lens: torch.Tensor         # int32 [seqs]
    query_start_loc: torch.Tensor  # int32 [seqs + 1]
    dense_k: list[torch.Tensor]    # per sequence [ctx, kv_heads, head_dim]
    dense_v: list[torch.Tensor]
    scale: float


def make_paged_case(
    seed: int,
    query_lens: list[int],
    ctx_lens: list[int],
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    block_size: int,
    dtype: torch.dtype = torch.float32,
    spare_blocks: int = 3,
) -> PagedCase:
    """Random paged attention inputs: shuffled block ids, unused block-table entries 0, one spare column."""
    gen = torch.Generator().manual_seed(seed)
    blocks_per_seq = [-(-c // block_size) for c in ctx_lens]
    num_blocks = sum(blocks_per_seq) + spare_blocks
    perm = torch.randperm(num_blocks, generator=gen).to(torch.int32)
    k_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim, generator=gen).to(dtype)
    v_cache = torch.randn(num_blocks, block_size, num_kv_heads, head_dim, generator=gen).to(dtype)
    max_blocks = max(blocks_per_seq) + 1
    block_tables = torch.zeros(len(ctx_lens), max_blocks, dtype=torch.int32)
    dense_k, dense_v, cursor = [], [], 0
    for seq, (n_blocks, ctx) in enumerate(zip(blocks_per_seq, ctx_lens)):
        ids = perm[cursor:cursor + n_blocks]
        cursor += n_blocks
        block_tables[seq, :n_blocks] = ids
        dense_k.append(k_cache[ids.long()].reshape(-1, num_kv_heads, head_dim)[:ctx])
        dense_v.append(v_cache[ids.long()].reshape(-1, num_kv_heads, head_dim)[:ctx])
    total = sum(query_lens)
    query = torch.randn(total, num_heads, head_dim, generator=gen).to(dtype)
    starts = [0]
    for q in query_lens:
        starts.append(starts[-1] + q)
    return PagedCase(
        query=query,
        k_cache=k_cache,
        v_cache=v_cache,
        block_tables=block_tables,
        seq_lens=torch.tensor(ctx_lens, dtype=torch.int32),
        query_start_loc=torch.tensor(starts, dtype=torch.int32),
        dense_k=dense_k,
        dense_v=dense_v,
        scale=head_dim ** -0.5,
    )


def dense_attention_f64(case: PagedCase, sliding_window: int | None = None) -> torch.Tensor:
    """Float64 causal attention from the unpaged K/V, one loop over tokens (clarity over speed)."""
    starts = case.query_start_loc.tolist()
    out = torch.empty(case.query.shape, dtype=torch.float64)
    num_heads = case.query.shape[1]
    for seq, ctx in enumerate(case.seq_lens.tolist()):
        k = case.dense_k[seq].double()
        v = case.dense_v[seq].double()
        group = num_heads // k.shape[1]
        k = k.repeat_interleave(group, dim=1)  # [ctx, heads, d]
        v = v.repeat_interleave(group, dim=1)
        query_len = starts[seq + 1] - starts[seq]
        for i in range(query_len):
            pos = ctx - query_len + i
            lo = 0 if sliding_window is None else max(0, pos - sliding_window + 1)
            q = case.query[starts[seq] + i].double()  # [heads, d]
            scores = torch.einsum("hd,nhd->hn", q, k[lo:pos + 1]) * case.scale
            out[starts[seq] + i] = torch.einsum("hn,nhd->hd", scores.softmax(-1), v[lo:pos + 1])
    return out


def random_bitmask(
    gen: torch.Generator, rows: int, vocab: int, density: float, words: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(bool allowed [rows, vocab], packed int32 bitmask [rows, words]) with bits ~ Bernoulli(density).

    With `words * 32 < vocab` the tokens past the mask width are not allowed."""
    words = -(-vocab // 32) if words is None else words
    bits = torch.rand(rows, words * 32, generator=gen) < density
    allowed = torch.zeros(rows, max(vocab, words * 32), dtype=torch.bool)
    allowed[:, : words * 32] = bits
    return allowed[:, :vocab].clone(), pack_bitmask(bits)


def pack_bitmask(allowed: torch.Tensor) -> torch.Tensor:
    """Bool [rows, words*32] (width a multiple of 32) -> int32 [rows, words], bit j%32 of word j//32."""
    rows, width = allowed.shape
    assert width % 32 == 0
    bits = allowed.reshape(rows, width // 32, 32).to(torch.int64)
    words = (bits << torch.arange(32, dtype=torch.int64)).sum(-1)
    words = torch.where(words >= 2**31, words - 2**32, words)
    return words.to(torch.int32)
