"""Triton kernels vs their torch twins, run under TRITON_INTERPRET=1 on CPU tensors.

Not collected by the main run (no test_ prefix): `test_kernels_triton.py` runs this file in a subprocess
with TRITON_INTERPRET=1 set before triton is imported, so the interpreter is active whatever else the main
session imported. Tolerances (max abs and rel error vs the torch reference, outputs of magnitude < 4):
float32 1e-5, float16 4e-3, bfloat16 3e-2 (one to two ulps of the output dtype; the interpreter rounds
float32 -> bfloat16 by truncation). KV write, bitmask apply and sampled token ids must match exactly.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
import torch

if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover - guarded by the subprocess wrapper
    raise RuntimeError("run through tests/test_kernels_triton.py (needs TRITON_INTERPRET=1 before import)")

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import dense_attention_f64, make_paged_case, random_bitmask  # noqa: E402

from formwork.kernels import SamplingTensors, reference  # noqa: E402
from formwork.kernels.attention_tuning import AttentionTuning  # noqa: E402
from formwork.kernels.launch import attention_launch  # noqa: E402
from formwork.kernels.triton import attention, bitmask, kv_cache, sampling  # noqa: E402

TOLERANCE = {torch.float32: 1e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}
DTYPES = list(TOLERANCE)


# --- KV write -------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(4))
def test_kv_write_matches_reference(seed):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    dtype = DTYPES[seed % 3]
    block_size, num_blocks = rng.choice([1, 4, 16]), rng.randint(2, 6)
    kv_heads, head_dim = rng.randint(1, 3), rng.choice([8, 24, 64])
    tokens = rng.randint(1, num_blocks * block_size)
    fused = torch.randn(tokens, 2 * kv_heads + 1, head_dim, generator=gen)  # key/value are strided views
    key, value = fused[:, :kv_heads], fused[:, kv_heads:2 * kv_heads]
    slots = torch.randperm(num_blocks * block_size, generator=gen)[:tokens]
    slots[torch.rand(tokens, generator=gen) < 0.3] = -1
    slots = slots.to(rng.choice([torch.int32, torch.int64]))
    caches = [torch.randn(num_blocks, block_size, kv_heads, head_dim, generator=gen).to(dtype) for _ in range(2)]
    expected = [c.clone() for c in caches]
    kv_cache.write_kv_cache(key, value, caches[0], caches[1], slots)
    reference.write_kv_cache(key, value, expected[0], expected[1], slots)
    assert torch.equal(caches[0], expected[0]) and torch.equal(caches[1], expected[1])


# --- bitmask --------------------------------------------------------------------------------------

@pytest.mark.parametrize("vocab,words,rows,use_indices,dtype", [
    (50, None, 3, False, torch.float32),
    (2100, None, 2, True, torch.float16),     # crosses the 1024-token program blocks
    (1030, 20, 3, False, torch.bfloat16),     # bitmask narrower than the logits: the tail is disallowed
    (64, 3, 4, True, torch.float32),          # bitmask wider than the logits
])
def test_bitmask_matches_reference(vocab, words, rows, use_indices, dtype):
    gen = torch.Generator().manual_seed(vocab)
    _, packed = random_bitmask(gen, rows, vocab, 0.5, words)
    logits = torch.randn(rows, vocab, generator=gen).to(dtype)
    indices = torch.tensor([rows - 1, 0], dtype=torch.int32) if use_indices else None
    expected = logits.clone()
    bitmask.apply_token_bitmask(logits, packed, indices)
    reference.apply_token_bitmask(expected, packed, indices)
    assert torch.equal(logits, expected)


# --- paged attention ------------------------------------------------------------------------------

def _random_attention_config(seed: int):
    """Ragged mixed batch: decode rows, fresh prefills and chunked prefills over a cached prefix."""
    rng = random.Random(seed)
    num_kv_heads = rng.choice([1, 2, 3])
    group = rng.choice([1, 2, 3, 4, 8])
    head_dim = rng.choice([8, 16, 24, 32, 64])
    block_size = rng.choice([1, 2, 5, 8, 16])
    query_lens, ctx_lens = [], []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["decode", "prefill", "chunk"])
        if kind == "decode":
            ctx = rng.randint(1, 40)
            query_lens.append(1)
        elif kind == "prefill":
            ctx = rng.randint(2, 24)
            query_lens.append(ctx)
        else:
            ctx = rng.randint(4, 40)
            query_lens.append(rng.randint(2, ctx - 1))
        ctx_lens.append(ctx)
    window = rng.choice([None, None, 1, 4, 9])
    splits = rng.choice([None, 1, 2, 4])
    return query_lens, ctx_lens, num_kv_heads * group, num_kv_heads, head_dim, block_size, window, splits


@pytest.mark.parametrize("seed", range(8))
def test_attention_matches_reference_random_batches(seed):
    query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, window, splits = _random_attention_config(seed)
    dtype = DTYPES[seed % 3]
    case = make_paged_case(100 + seed, query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, dtype)
    args = (case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.query_start_loc,
            case.scale, window)
    out = attention.paged_attention(*args, num_kv_splits=splits)
    expected = reference.paged_attention(*args)
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(out.float(), expected.float(), atol=tol, rtol=tol)


@pytest.mark.parametrize("splits", [None, 8])
def test_split_kv_decode_over_long_context_matches_dense(splits):
    # Decode-only batch over up to 320 positions: the default heuristic splits KV 2 ways.
    case = make_paged_case(7, [1, 1], [300, 37], 4, 2, 16, 16, torch.float32)
    out = attention.paged_attention(case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens,
                                    case.query_start_loc, case.scale, None, num_kv_splits=splits)
    torch.testing.assert_close(out.double(), dense_attention_f64(case), atol=1e-5, rtol=1e-5)


# (query lens, context lens, heads, kv heads, head_dim, block size, window, splits, dtype)
KV_TILE_CASES = {
    "decode-splits-partial-pages": ([1, 1, 1], [300, 37, 129], 8, 2, 32, 16, None, 4, torch.float32),
    "mixed-window-pages-of-5": ([1, 20, 7], [150, 20, 90], 6, 3, 24, 5, 33, None, torch.float16),
    "chunked-prefill-mqa-window-splits": ([40, 1], [100, 70], 4, 1, 64, 8, 9, 2, torch.bfloat16),
}


@pytest.mark.parametrize("kv_tile", [16, 32, 64, 128])
@pytest.mark.parametrize("case_name", list(KV_TILE_CASES))
def test_each_kv_tile_matches_dense_attention(kv_tile, case_name):
    """Tiles spanning several pages, part of a page, or pages that straddle tiles (block size 5)."""
    query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, window, splits, dtype = KV_TILE_CASES[case_name]
    case = make_paged_case(kv_tile, query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, dtype)
    tuning = AttentionTuning(kv_tile=kv_tile, prefill_kv_tile=kv_tile)
    args = (case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, case.query_start_loc,
            case.scale, window)
    assert attention_launch(case.query, case.k_cache, case.block_tables, splits, tuning=tuning).kv_tile == kv_tile
    out = attention.paged_attention(*args, num_kv_splits=splits, tuning=tuning)
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(out.double(), dense_attention_f64(case, window), atol=tol, rtol=tol)


def test_attention_reads_strided_query_and_int64_metadata():
    case = make_paged_case(9, [3, 1], [10, 6], 4, 2, 16, 4, torch.float16)
    fused = torch.cat([case.query, torch.zeros_like(case.query)], dim=1)  # [T, 2H, D]
    query = fused[:, :4]
    out = attention.paged_attention(query, case.k_cache, case.v_cache, case.block_tables.long(),
                                    case.seq_lens.long(), case.query_start_loc.long(), case.scale, 3)
    expected = reference.paged_attention(case.query, case.k_cache, case.v_cache, case.block_tables,
                                         case.seq_lens, case.query_start_loc, case.scale, 3)
    torch.testing.assert_close(out.float(), expected.float(), atol=4e-3, rtol=4e-3)


# --- sampling -------------------------------------------------------------------------------------

def _random_sampling_inputs(seed: int, rows: int, vocab: int, dtype: torch.dtype, with_mask: bool):
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    logits = (torch.randn(rows, vocab, generator=gen) * rng.choice([0.5, 2.0, 6.0])).to(dtype)
    if rng.random() < 0.5:  # coarse values make ties at the top-k / top-p thresholds
        logits = logits.float().round().to(dtype)
    params = SamplingTensors.from_lists(
        [rng.choice([0.0, 0.25, 0.7, 1.0, 1.8]) for _ in range(rows)],
        [rng.choice([-1, 0, 1, 3, 20, vocab + 5]) for _ in range(rows)],
        [rng.choice([1.0, 0.95, 0.6, 0.2]) for _ in range(rows)],
        [rng.choice([0.0, 0.0, 0.05, 0.3]) for _ in range(rows)],
        [rng.randrange(2**62) for _ in range(rows)],
        [rng.randrange(2**34) for _ in range(rows)],
    )
    packed = None
    if with_mask:
        _, packed = random_bitmask(gen, rows, vocab, rng.choice([0.05, 0.5, 0.95]))
    return logits, params, packed


@pytest.mark.parametrize("seed,rows,vocab,rows_per_program", [
    (0, 64, 100, None), (1, 9, 333, 4), (2, 5, 1500, 1), (3, 200, 40, None), (4, 6, 2049, 2),
])
def test_sampling_matches_reference_exactly(seed, rows, vocab, rows_per_program):
    dtype = DTYPES[seed % 3]
    logits, params, packed = _random_sampling_inputs(seed, rows, vocab, dtype, with_mask=seed % 2 == 0)
    tokens, logprobs = sampling.sample(logits, params, packed, rows_per_program=rows_per_program)
    ref_tokens, ref_logprobs = reference.sample(logits, params, packed)
    assert tokens.tolist() == ref_tokens.tolist()
    torch.testing.assert_close(logprobs, ref_logprobs, atol=1e-5, rtol=1e-5)
