"""Torch reference kernels (the engine's CPU path): correctness against independent ground truth."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import dense_attention_f64, make_paged_case, pack_bitmask, random_bitmask  # noqa: E402

from formwork.kernels import (  # noqa: E402
    KernelBackendError,
    KernelInputError,
    SamplingTensors,
    apply_token_bitmask,
    paged_attention,
    select_backend,
    write_kv_cache,
)
from formwork.kernels.reference.philox import philox_randint  # noqa: E402

pytestmark = pytest.mark.usefixtures("torch_backend")


@pytest.fixture
def torch_backend(monkeypatch):
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", "torch")


# --- dispatch -------------------------------------------------------------------------------------

def test_dispatch_picks_torch_for_cpu_and_rejects_bad_backend(monkeypatch):
    monkeypatch.delenv("FORMWORK_KERNEL_BACKEND")
    assert select_backend(torch.zeros(1)) == "torch"
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", "cuda")
    with pytest.raises(KernelBackendError, match="expected one of"):
        select_backend(torch.zeros(1))


def test_forcing_triton_on_cpu_without_interpreter_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", "triton")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(KernelBackendError, match="TRITON_INTERPRET=1"):
        select_backend(torch.zeros(1))


# --- KV write -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_write_kv_cache_scatters_by_slot_and_skips_padding(dtype):
    gen = torch.Generator().manual_seed(0)
    num_blocks, block_size, kv_heads, head_dim, tokens = 5, 4, 2, 8, 9
    k_cache = torch.zeros(num_blocks, block_size, kv_heads, head_dim, dtype=dtype)
    v_cache = torch.zeros_like(k_cache)
    key = torch.randn(tokens, kv_heads, head_dim, generator=gen)
    value = torch.randn(tokens, kv_heads, head_dim, generator=gen)
    slots = torch.randperm(num_blocks * block_size, generator=gen)[:tokens]
    slots[[2, 5]] = -1
    write_kv_cache(key, value, k_cache, v_cache, slots)
    flat_k = k_cache.view(-1, kv_heads, head_dim)
    flat_v = v_cache.view(-1, kv_heads, head_dim)
    for t, slot in enumerate(slots.tolist()):
        if slot >= 0:
            assert torch.equal(flat_k[slot], key[t].to(dtype))
            assert torch.equal(flat_v[slot], value[t].to(dtype))
    written = torch.zeros(num_blocks * block_size, dtype=torch.bool)
    written[slots[slots >= 0]] = True
    assert flat_k[~written].abs().sum() == 0 and flat_v[~written].abs().sum() == 0


def test_write_kv_cache_rejects_mismatched_shapes():
    cache = torch.zeros(2, 4, 2, 8)
    with pytest.raises(KernelInputError, match="heads/dim"):
        write_kv_cache(torch.zeros(3, 1, 8), torch.zeros(3, 1, 8), cache, cache.clone(), torch.zeros(3, dtype=torch.long))


# --- paged attention ------------------------------------------------------------------------------

ATTENTION_CASES = [
    # query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, window
    ([7], [7], 4, 4, 16, 4, None),                        # plain prefill, MHA
    ([1, 1, 1], [5, 17, 1], 8, 2, 32, 8, None),           # decode batch, GQA 4
    ([5, 1, 3], [12, 9, 3], 4, 1, 8, 4, None),            # chunked prefill on a prefix + decode + prefill, MQA
    ([6, 1, 2], [20, 30, 11], 6, 2, 16, 16, 5),           # sliding window, mixed
    ([1, 4], [3, 4], 2, 2, 64, 1, 2),                     # block size 1, window 2
    ([5, 3], [40, 3], 4, 2, 8, 4, 3),                     # chunk whose window starts blocks into the prefix
    ([1] * 20, [(7 * i) % 33 + 1 for i in range(20)], 4, 2, 8, 4, None),  # decode rows in several groups
    ([1] * 18 + [3], [(5 * i) % 29 + 3 for i in range(19)], 2, 1, 8, 2, 6),
]


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("case_args", ATTENTION_CASES)
def test_reference_attention_equals_dense_float64(case_args, dtype, tol):
    query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, window = case_args
    case = make_paged_case(1, query_lens, ctx_lens, heads, kv_heads, head_dim, block_size, dtype)
    out = paged_attention(case.query, case.k_cache, case.v_cache, case.block_tables, case.seq_lens,
                          case.query_start_loc, case.scale, sliding_window=window)
    assert out.dtype == dtype and out.shape == case.query.shape
    expected = dense_attention_f64(case, window)
    torch.testing.assert_close(out.double(), expected, atol=tol, rtol=tol)


def test_reference_attention_rejects_context_shorter_than_query():
    case = make_paged_case(0, [4], [4], 2, 2, 8, 4)
    with pytest.raises(KernelInputError, match="must include them"):
        paged_attention(case.query, case.k_cache, case.v_cache, case.block_tables,
                        torch.tensor([3], dtype=torch.int32), case.query_start_loc, case.scale)


def test_reference_attention_rejects_bad_head_grouping():
    case = make_paged_case(0, [2], [2], 3, 3, 8, 4)
    cache = torch.zeros(4, 4, 2, 8)
    with pytest.raises(KernelInputError, match="multiple of num_kv_heads"):
        paged_attention(case.query, cache, cache, case.block_tables, case.seq_lens, case.query_start_loc, 1.0)


# --- bitmask --------------------------------------------------------------------------------------

@pytest.mark.parametrize("vocab,words", [(100, None), (64, None), (70, 2), (33, 5)])
def test_bitmask_apply_matches_bool_mask(vocab, words):
    gen = torch.Generator().manual_seed(vocab)
    allowed, bitmask = random_bitmask(gen, 3, vocab, 0.4, words)
    logits = torch.randn(3, vocab, generator=gen)
    expected = torch.where(allowed, logits, float("-inf"))
    apply_token_bitmask(logits, bitmask)
    assert torch.equal(logits, expected)


def test_bitmask_apply_only_touches_indexed_rows():
    gen = torch.Generator().manual_seed(3)
    allowed, bitmask = random_bitmask(gen, 4, 50, 0.3)
    logits = torch.randn(4, 50, generator=gen, dtype=torch.float32).to(torch.float16)
    original = logits.clone()
    apply_token_bitmask(logits, bitmask, indices=torch.tensor([3, 1]))
    for row in (0, 2):
        assert torch.equal(logits[row], original[row])
    for row in (1, 3):
        assert torch.equal(logits[row], torch.where(allowed[row], original[row], float("-inf")))


def test_pack_bitmask_bit_order():
    allowed = torch.zeros(1, 64, dtype=torch.bool)
    allowed[0, [0, 31, 33]] = True
    assert pack_bitmask(allowed).tolist() == [[1 - 2**31, 2]]


# --- philox ---------------------------------------------------------------------------------------

def test_philox_known_answer():
    # Random123 known-answer vector for Philox4x32-10: key (0, 0), counter (0, 0, 0, 0) -> 0x6627e8d5 first.
    zero = torch.zeros(1, dtype=torch.int64)
    assert philox_randint(zero, zero, zero).item() == 0x6627E8D5


# --- sampling tensors -----------------------------------------------------------------------------

def test_sampling_tensors_from_lists_validates():
    params = SamplingTensors.from_lists([0.0, 0.7], [0, 5], [1.0, 0.9], [0.0, 0.1], [1, 2], [0, 3])
    assert params.top_k.dtype == torch.int32 and params.seeds.dtype == torch.int64
    with pytest.raises(KernelInputError, match="top_p"):
        SamplingTensors.from_lists([1.0], [0], [0.0], [0.0], [1], [0])
    with pytest.raises(KernelInputError, match="temperature"):
        SamplingTensors.from_lists([-1.0], [0], [1.0], [0.0], [1], [0])
    with pytest.raises(KernelInputError, match="differ in length"):
        SamplingTensors.from_lists([1.0], [0, 1], [1.0], [0.0], [1], [0])
    with pytest.raises(KernelInputError, match="int32"):
        SamplingTensors(params.temperature, params.top_k.long(), params.top_p, params.min_p, params.seeds, params.steps)
