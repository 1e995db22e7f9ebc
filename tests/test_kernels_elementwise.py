"""The model's fused elementwise kernels through the dispatcher on the CPU (torch reference path):
RMSNorm with the in-place residual add, SiLU-and-mul, rotary embedding. Checked against float64 ground
truth and against rotation properties; input errors and variant keys."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork import kernels
from formwork.kernels import KernelInputError, dispatch
from formwork.kernels.launch import RowLaunch
from formwork.kernels.variants import VariantLog


@pytest.fixture
def fresh_log(monkeypatch):
    log = VariantLog()
    monkeypatch.setattr(dispatch, "variant_log", log)
    return log


def _inv_freq(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))


# --- RMSNorm --------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(tokens=st.integers(1, 4), hidden=st.integers(1, 70), with_residual=st.booleans(), seed=st.integers(0, 999))
def test_rms_norm_matches_float64_and_updates_the_residual(tokens, hidden, with_residual, seed):
    gen = torch.Generator().manual_seed(seed)
    x, weight = torch.randn(tokens, hidden, generator=gen), torch.randn(hidden, generator=gen)
    residual = torch.randn(tokens, hidden, generator=gen) if with_residual else None
    h = x.double() if residual is None else x.double() + residual.double()
    expected = weight.double() * h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
    out = kernels.rms_norm(x, weight, 1e-6, residual)
    torch.testing.assert_close(out.double(), expected, atol=1e-5, rtol=1e-5)
    if residual is not None:
        torch.testing.assert_close(residual.double(), h)


def test_rms_norm_adds_the_residual_in_the_model_dtype():
    """bf16 residual stream: the sum is rounded to bf16 before it is normalised (as HF's ``hidden + out``)."""
    gen = torch.Generator().manual_seed(0)
    x, residual = torch.randn(3, 40, generator=gen).bfloat16(), torch.randn(3, 40, generator=gen).bfloat16()
    weight = torch.randn(40, generator=gen).bfloat16()
    expected_sum = residual + x
    out = kernels.rms_norm(x, weight, 1e-5, residual)
    assert torch.equal(residual, expected_sum)
    assert torch.equal(out, kernels.rms_norm(expected_sum, weight, 1e-5))


@pytest.mark.parametrize("make_args, message", [
    (lambda: (torch.zeros(2, 3, 4), torch.zeros(4), None), "x must be"),
    (lambda: (torch.zeros(2, 4), torch.zeros(5), None), "weight must be"),
    (lambda: (torch.zeros(2, 4), torch.zeros(4, dtype=torch.float16), None), "weight must be"),
    (lambda: (torch.zeros(2, 4), torch.zeros(4), torch.zeros(3, 4)), "residual must be"),
    (lambda: (torch.zeros(2, 4), torch.zeros(4), torch.zeros(4, 2).t()), "contiguous"),
])
def test_rms_norm_rejects_bad_inputs(make_args, message):
    x, weight, residual = make_args()
    with pytest.raises(KernelInputError, match=message):
        kernels.rms_norm(x, weight, 1e-6, residual)


# --- SiLU-and-mul ---------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(tokens=st.integers(1, 4), width=st.integers(1, 50), seed=st.integers(0, 999))
def test_silu_and_mul_matches_float64(tokens, width, seed):
    gate_up = torch.randn(tokens, 2 * width, generator=torch.Generator().manual_seed(seed)) * 4
    gate, up = gate_up.double()[:, :width], gate_up.double()[:, width:]
    expected = gate * torch.sigmoid(gate) * up
    torch.testing.assert_close(kernels.silu_and_mul(gate_up).double(), expected, atol=1e-5, rtol=1e-5)


def test_silu_and_mul_rejects_an_odd_width():
    with pytest.raises(KernelInputError, match="gate_up must be"):
        kernels.silu_and_mul(torch.zeros(2, 5))


# --- rotary ---------------------------------------------------------------------------------------

def _rotated(positions, query, key, inv_freq, scaling=1.0):
    query, key = query.clone(), key.clone()
    kernels.rotary_embedding(query, key, *kernels.rotary_tables(positions, inv_freq, scaling, query.dtype))
    return query, key


@settings(max_examples=25, deadline=None)
@given(head_dim=st.sampled_from([2, 6, 16]), heads=st.integers(1, 3), m=st.integers(0, 300),
       n=st.integers(0, 300), shift=st.integers(0, 300), seed=st.integers(0, 999))
def test_rotary_scores_depend_only_on_relative_position(head_dim, heads, m, n, shift, seed):
    """<rot(q, m), rot(k, n)> is a function of m - n: shifting both positions keeps every score."""
    gen = torch.Generator().manual_seed(seed)
    query, key = torch.randn(1, heads, head_dim, generator=gen), torch.randn(1, heads, head_dim, generator=gen)
    inv_freq = _inv_freq(head_dim)
    scores = []
    for offset in (0, shift):
        q, _ = _rotated(torch.tensor([m + offset]), query, key, inv_freq)
        _, k = _rotated(torch.tensor([n + offset]), query, key, inv_freq)
        scores.append((q * k).sum(-1))
    torch.testing.assert_close(scores[0], scores[1], atol=2e-3, rtol=2e-3)


def test_rotary_is_a_scaled_rotation_of_each_half_pair():
    gen = torch.Generator().manual_seed(1)
    query, key = torch.randn(4, 3, 8, generator=gen), torch.randn(4, 1, 8, generator=gen)
    positions, inv_freq = torch.tensor([0, 1, 7, 1000]), _inv_freq(8)
    q, k = _rotated(positions, query, key, inv_freq, scaling=1.5)
    angle = positions.double()[:, None, None] * inv_freq.double()
    for before, after in ((query, q), (key, k)):
        x1, x2 = before.double()[..., :4], before.double()[..., 4:]
        expected = 1.5 * torch.cat((x1 * angle.cos() - x2 * angle.sin(), x2 * angle.cos() + x1 * angle.sin()), -1)
        torch.testing.assert_close(after.double(), expected, atol=1e-4, rtol=1e-4)
    assert torch.equal(q[0], 1.5 * query[0])  # position 0: no rotation


def test_rotary_rotates_views_of_a_fused_row_in_place():
    qkv = torch.randn(2, (2 + 2 * 1) * 4, generator=torch.Generator().manual_seed(2))
    value = qkv[:, 12:].clone()
    query, key = qkv[:, :8].view(2, 2, 4), qkv[:, 8:12].view(2, 1, 4)
    expected_q, expected_k = _rotated(torch.tensor([3, 9]), query, key, _inv_freq(4))
    kernels.rotary_embedding(query, key, *kernels.rotary_tables(torch.tensor([3, 9]), _inv_freq(4), 1.0, query.dtype))
    assert torch.equal(qkv[:, :8].view(2, 2, 4), expected_q) and torch.equal(qkv[:, 8:12].view(2, 1, 4), expected_k)
    assert torch.equal(qkv[:, 12:], value)


@pytest.mark.parametrize("positions, inv_freq, message", [
    (torch.tensor([1.0, 2.0]), _inv_freq(4), "positions must be"),
    (torch.tensor([[1, 2]]), _inv_freq(4), "positions must be"),
    (torch.tensor([1, 2]), _inv_freq(4).double(), "inv_freq must be"),
])
def test_rotary_tables_reject_bad_inputs(positions, inv_freq, message):
    with pytest.raises(KernelInputError, match=message):
        kernels.rotary_tables(positions, inv_freq, 1.0, torch.float32)


@pytest.mark.parametrize("tokens, head_dim, dtype", [(1, 4, torch.float32), (2, 6, torch.float32), (2, 4, torch.float16)])
def test_rotary_rejects_tables_of_another_shape_or_dtype(tokens, head_dim, dtype):
    cos, sin = kernels.rotary_tables(torch.arange(tokens), _inv_freq(head_dim), 1.0, dtype)
    with pytest.raises(KernelInputError, match="cos/sin tables must be"):
        kernels.rotary_embedding(torch.zeros(2, 2, 4), torch.zeros(2, 1, 4), cos, sin)


# --- variant keys ---------------------------------------------------------------------------------

def test_variant_keys_name_the_compiled_binaries(fresh_log):
    x = torch.zeros(3, 1500)
    kernels.rms_norm(x, torch.ones(1500), 1e-6)
    kernels.rms_norm(torch.zeros(5, 1500), torch.ones(1500), 1e-6, torch.zeros(5, 1500))
    kernels.rms_norm(torch.zeros(1, 1500), torch.ones(1500), 1e-6, torch.zeros(1, 1500))  # token count: no new key
    kernels.silu_and_mul(torch.zeros(2, 6000))
    qkv = torch.zeros(2, 6 * 8)
    kernels.rotary_embedding(qkv[:, :32].view(2, 4, 8), qkv[:, 32:40].view(2, 1, 8),
                             *kernels.rotary_tables(torch.tensor([0, 1]), _inv_freq(8), 1.0, torch.float32))
    keys = sorted(fresh_log.seen(), key=str)
    assert [key[:4] for key in keys if key[0] == "rms_norm"] == [
        ("rms_norm", torch.float32, 1500, False), ("rms_norm", torch.float32, 1500, True)]
    assert {key[4] for key in keys if key[0] == "rms_norm"} == {RowLaunch(2048, 8)}
    assert [key[:4] for key in keys if key[0] == "silu_and_mul"] == [
        ("silu_and_mul", torch.float32, 3000, RowLaunch(1024, 4))]
    rotary = [key for key in keys if key[0] == "rotary_embedding"]
    assert [key[:8] for key in rotary] == [("rotary_embedding", torch.float32, 4, 1, 8, (48, 8), (48, 8), 8)]
    assert len(keys) == 4 and sum(fresh_log.launches.values()) == 5


def test_a_steps_rotary_tables_are_made_once_for_all_layers(monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from conftest_model import make_runner, prefill_logits

    from formwork.kernels import reference

    runner = make_runner("llama", num_blocks=8, block_size=4)
    assert len(runner.model.model.layers) > 1
    made = []

    def counted(*args):
        made.append(args[0].shape)
        return original(*args)

    original = reference.rotary_tables
    monkeypatch.setattr(reference, "rotary_tables", counted)  # what kernels.rotary_tables calls
    prefill_logits(runner, [3, 5, 7, 9, 11], list(range(2)))
    assert made == [torch.Size([5])]
