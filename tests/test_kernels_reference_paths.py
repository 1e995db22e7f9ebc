"""Torch reference kernels: the layout-dependent paths (contiguous pool fast paths vs strided fallbacks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import dense_attention_f64, make_paged_case  # noqa: E402

from formwork.kernels import paged_attention, write_kv_cache  # noqa: E402
from formwork.kernels.reference.attention import DECODE_GROUP  # noqa: E402


@pytest.fixture(autouse=True)
def torch_backend(monkeypatch):
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", "torch")


def _strided_copy(cache: torch.Tensor) -> torch.Tensor:
    """The same values in a non-contiguous pool (every other element of a wider head_dim)."""
    wide = torch.zeros(*cache.shape[:3], cache.shape[3] * 2, dtype=cache.dtype)
    wide[..., ::2] = cache
    strided = wide[..., ::2]
    assert not strided.is_contiguous()
    return strided


def test_write_kv_cache_into_strided_pool_matches_contiguous_pool():
    gen = torch.Generator().manual_seed(1)
    key, value = torch.randn(6, 2, 8, generator=gen), torch.randn(6, 2, 8, generator=gen)
    slots = torch.tensor([5, -1, 0, 11, -1, 7])
    contiguous = (torch.zeros(3, 4, 2, 8), torch.zeros(3, 4, 2, 8))
    strided = (_strided_copy(contiguous[0]), _strided_copy(contiguous[1]))
    write_kv_cache(key, value, *contiguous, slots)
    write_kv_cache(key, value, *strided, slots)
    assert torch.equal(strided[0], contiguous[0]) and torch.equal(strided[1], contiguous[1])
    assert torch.equal(contiguous[0].view(-1, 2, 8)[11], key[3])
    assert contiguous[1].view(-1, 2, 8)[[1, 2, 3, 4, 6, 8, 9, 10]].abs().sum() == 0


def test_write_kv_cache_int32_slots_without_padding():
    key = torch.arange(2 * 1 * 4, dtype=torch.float32).view(2, 1, 4)
    k_cache, v_cache = torch.zeros(2, 2, 1, 4), torch.zeros(2, 2, 1, 4)
    write_kv_cache(key, -key, k_cache, v_cache, torch.tensor([3, 0], dtype=torch.int32))
    assert torch.equal(k_cache[1, 1, 0], key[0, 0]) and torch.equal(v_cache[0, 0, 0], -key[1, 0])


@pytest.mark.parametrize("window", [None, 7])
def test_decode_groups_with_garbage_table_entries_and_strided_values(window):
    """More decode rows than one group; unused block-table entries out of range; V read in place or gathered."""
    num_seqs = DECODE_GROUP + 5
    ctx_lens = [(11 * i) % 45 + 1 for i in range(num_seqs)]
    case = make_paged_case(4, [1] * num_seqs, ctx_lens, 6, 2, 8, 4)
    used = torch.arange(case.block_tables.shape[1]) < torch.tensor([-(-c // 4) for c in ctx_lens]).view(-1, 1)
    case.block_tables[~used] = 10**6
    expected = dense_attention_f64(case, window)
    args = (case.block_tables, case.seq_lens, case.query_start_loc, case.scale)
    in_place = paged_attention(case.query, case.k_cache, case.v_cache, *args, sliding_window=window)
    gathered = paged_attention(case.query, case.k_cache, _strided_copy(case.v_cache), *args, sliding_window=window)
    torch.testing.assert_close(in_place.double(), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(gathered.double(), expected, atol=1e-5, rtol=1e-5)
