"""Paged-attention launch tuning: the FORMWORK_ATTENTION_LAUNCH override, the split heuristic, the
shared-memory fit, how `attention_launch` picks decode or prefill settings, and the sweep's smoke run.
(The kernel at each KV tile is checked under the interpreter in kernels_triton_cases.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from formwork.kernels import KernelInputError
from formwork.kernels.attention_tuning import (
    ENV,
    SHARED_MEMORY_BUDGET,
    AttentionTuning,
    current_tuning,
    default_splits,
    fit_shared_memory,
    parse_tuning,
)
from formwork.kernels.launch import attention_key, attention_launch

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_override_replaces_the_named_fields_only():
    tuning = parse_tuning(" kv_tile=128, num_warps=8,num_stages=3 ,split_target_programs=2048,max_splits=32,",
                          AttentionTuning())
    assert (tuning.kv_tile, tuning.num_warps, tuning.num_stages) == (128, 8, 3)
    assert (tuning.split_target_programs, tuning.max_splits) == (2048, 32)
    assert tuning.prefill_kv_tile == AttentionTuning().prefill_kv_tile
    assert parse_tuning("", AttentionTuning()) == AttentionTuning()


@pytest.mark.parametrize("text,named", [
    ("kv_tile=48", "kv_tile=48"),                # not a power of two >= 16
    ("kv_tile=8", "kv_tile=8"),                  # below tl.dot's 16
    ("prefill_kv_tile=512", "prefill_kv_tile=512"),
    ("num_warps=3", "num_warps=3"),
    ("max_splits=0", "max_splits=0"),
    ("num_stages=0", "num_stages=0"),
    ("kv_tiles=64", "'kv_tiles=64'"),            # unknown field
    ("kv_tile", "'kv_tile'"),                    # no value
    ("num_warps=four", "num_warps='four'"),
])
def test_bad_override_is_a_typed_error_naming_it(text, named):
    with pytest.raises(KernelInputError, match=named.replace("'", "'?")):
        parse_tuning(text, AttentionTuning())


def test_current_tuning_follows_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert current_tuning() == AttentionTuning()
    monkeypatch.setenv(ENV, "kv_tile=32,prefill_num_warps=8")
    assert current_tuning() == AttentionTuning(kv_tile=32, prefill_num_warps=8)
    monkeypatch.setenv(ENV, "kv_tile=33")
    with pytest.raises(KernelInputError, match=f"{ENV}|kv_tile=33"):
        current_tuning()


def test_split_heuristic_at_the_issue_shapes():
    tuning = AttentionTuning(split_target_programs=512, max_splits=64, split_min_tokens=128)
    assert default_splits(tuning, False, 4, 100_000) == 1      # batches with prefill never split
    assert default_splits(tuning, True, 64 * 8, 1024) == 1     # 64 sequences x 8 kv heads fill the target
    assert default_splits(tuning, True, 2 * 8, 16384) == 32    # 2 long sequences: 16 programs x 32
    assert default_splits(tuning, True, 2 * 8, 300) == 2       # capped by 128-position slices
    assert default_splits(tuning, True, 2 * 8, 100) == 1
    assert default_splits(AttentionTuning(max_splits=8), True, 1, 100_000) == 8


@given(st.integers(1, 4096), st.integers(1, 1 << 20), st.sampled_from([1, 2, 8, 64, 256]),
       st.integers(1, 8192), st.integers(1, 512))
def test_split_count_is_the_fewest_within_every_bound(programs, context, max_splits, target, min_tokens):
    tuning = AttentionTuning(split_target_programs=target, max_splits=max_splits, split_min_tokens=min_tokens)
    splits = default_splits(tuning, True, programs, context)
    assert splits & (splits - 1) == 0 and splits <= max_splits
    if splits > 1:
        assert splits * min_tokens <= context and programs * splits // 2 < target
    if splits < max_splits and 2 * splits * min_tokens <= context:
        assert programs * splits >= target  # stopped because the grid is large enough


def test_shared_memory_fit_drops_stages_then_halves_the_tile():
    bf16_d128 = 2 * 128 * 2  # K and V bytes of one position
    assert fit_shared_memory(64, 2, bf16_d128) == (64, 2)
    assert fit_shared_memory(128, 4, bf16_d128) == (128, 2)
    fp32_d256 = 2 * 256 * 4
    tile, stages = fit_shared_memory(256, 3, fp32_d256)
    assert (tile, stages) == (64, 1) and tile * stages * fp32_d256 <= SHARED_MEMORY_BUDGET


def _inputs(query_lens, ctx_lens, heads=8, kv_heads=2, head_dim=64, block_size=16, dtype=torch.float16):
    blocks = max(-(-c // block_size) for c in ctx_lens)
    query = torch.zeros(sum(query_lens), heads, head_dim, dtype=dtype)
    k_cache = torch.zeros(blocks * len(ctx_lens), block_size, kv_heads, head_dim, dtype=dtype)
    return query, k_cache, torch.zeros(len(ctx_lens), blocks, dtype=torch.int32)


def test_launch_takes_decode_or_prefill_settings_and_the_key_shows_them(monkeypatch):
    tuning = AttentionTuning(kv_tile=128, num_warps=8, num_stages=1, prefill_kv_tile=16, prefill_num_warps=2,
                             prefill_num_stages=3)
    decode = attention_launch(*_inputs([1, 1], [40, 70]), tuning=tuning)
    assert (decode.kv_tile, decode.num_warps, decode.num_stages) == (128, 8, 1)
    prefill = attention_launch(*_inputs([5, 1], [40, 70]), tuning=tuning)
    assert (prefill.kv_tile, prefill.num_warps, prefill.num_stages) == (16, 2, 3)
    monkeypatch.delenv(ENV, raising=False)
    default_key = attention_key(*_inputs([1, 1], [40, 70]), None)
    monkeypatch.setenv(ENV, "kv_tile=32")
    assert attention_key(*_inputs([1, 1], [40, 70]), None) != default_key  # a separate binary


def test_attention_sweep_smoke_run_checks_every_config():
    env = {k: v for k, v in os.environ.items() if k != ENV}
    result = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "attention_sweep.py"), "--smoke"],
                            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "WRONG" not in out and "| error |" not in out, out
    for shape in ("decode 2 x 40", "split-KV decode 1 x 256", "prefill 1 x 20"):
        assert f"best for {shape}: " in out, out
    assert out.count("edge case ") == 6 and out.count(": max diff ") == 6, out
    assert 'suggested: FORMWORK_ATTENTION_LAUNCH="kv_tile=' in out
    suggested = out.split('FORMWORK_ATTENTION_LAUNCH="')[1].split('"')[0]
    parse_tuning(suggested, AttentionTuning())  # a value the override accepts
