"""Sampling properties, for whichever backend FORMWORK_KERNEL_BACKEND names (torch when unset).

The main run exercises the torch path; `test_kernels_triton.py` re-runs this file in a subprocess with
FORMWORK_KERNEL_BACKEND=triton and TRITON_INTERPRET=1, so both paths must show the same properties.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import pack_bitmask  # noqa: E402

from formwork.kernels import SamplingTensors, sample, select_backend  # noqa: E402

BACKEND = os.environ.get("FORMWORK_KERNEL_BACKEND", "torch")
P_VALUE_FLOOR = 1e-4


@pytest.fixture(autouse=True)
def _backend(monkeypatch):
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", BACKEND)


def test_backend_under_test_is_the_one_dispatched():
    assert select_backend(torch.zeros(1)) == BACKEND


def _params(batch, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seeds=None, steps=None):
    def col(value):
        return list(value) if isinstance(value, (list, tuple)) else [value] * batch
    return SamplingTensors.from_lists(
        col(temperature), col(top_k), col(top_p), col(min_p),
        col(seeds if seeds is not None else list(range(batch))),
        col(steps if steps is not None else [0] * batch),
    )


def _full_mask(rows, vocab):
    return pack_bitmask(torch.ones(rows, -(-vocab // 32) * 32, dtype=torch.bool))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_greedy_is_argmax_of_masked_logits_with_lowest_id_on_ties(dtype):
    gen = torch.Generator().manual_seed(5)
    rows, vocab = 6, 77
    # Integer-valued logits make ties common; the lowest allowed id among the maxima must win.
    logits = torch.randint(-3, 3, (rows, vocab), generator=gen).to(dtype)
    allowed = torch.rand(rows, 96, generator=gen) < 0.5
    allowed[:, 0] = True
    masked = torch.where(allowed[:, :vocab], logits.float(), float("-inf"))
    tokens, logprobs = sample(logits, _params(rows, temperature=0.0), pack_bitmask(allowed))
    assert tokens.dtype == torch.int64 and logprobs.dtype == torch.float32
    assert tokens.tolist() == masked.argmax(dim=1).tolist()
    expected = torch.log_softmax(masked, dim=1).gather(1, tokens.unsqueeze(1)).squeeze(1)
    torch.testing.assert_close(logprobs, expected, atol=1e-5, rtol=1e-5)


def test_sampling_does_not_modify_logits_and_reports_masked_logprobs():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 40, generator=gen)
    original = logits.clone()
    allowed = torch.rand(3, 64, generator=gen) < 0.5
    allowed[:, 3] = True
    tokens, logprobs = sample(logits, _params(3, temperature=0.8, top_k=5), pack_bitmask(allowed))
    assert torch.equal(logits, original)
    masked = torch.where(allowed[:, :40], logits, float("-inf"))
    expected = torch.log_softmax(masked, dim=1).gather(1, tokens.unsqueeze(1)).squeeze(1)
    torch.testing.assert_close(logprobs, expected, atol=1e-5, rtol=1e-5)


def test_row_with_nothing_allowed_returns_minus_one():
    logits = torch.randn(2, 40)
    allowed = torch.ones(2, 64, dtype=torch.bool)
    allowed[1] = False
    tokens, logprobs = sample(logits, _params(2, temperature=[0.0, 1.0]), pack_bitmask(allowed))
    assert tokens[1].item() == -1 and logprobs[1].item() == float("-inf")
    allowed[0] = False
    allowed[1] = True
    tokens, logprobs = sample(logits, _params(2, temperature=[0.0, 1.0]), pack_bitmask(allowed))
    assert tokens[0].item() == -1 and logprobs[0].item() == float("-inf") and tokens[1].item() >= 0


@settings(deadline=None, max_examples=25)
@given(
    vocab=st.integers(2, 90),
    data=st.data(),
    temperature=st.sampled_from([0.0, 0.3, 1.0, 2.5]),
    top_k=st.integers(-1, 10),
    top_p=st.sampled_from([1.0, 0.9, 0.5, 0.1]),
    min_p=st.sampled_from([0.0, 0.05, 0.5]),
    seed=st.integers(0, 2**40),
)
def test_disallowed_token_is_never_sampled(vocab, data, temperature, top_k, top_p, min_p, seed):
    words = data.draw(st.integers(-(-vocab // 32), -(-vocab // 32) + 1))
    bits = data.draw(st.lists(st.booleans(), min_size=words * 32, max_size=words * 32))
    allowed = torch.tensor(bits).reshape(1, -1)
    allowed[0, data.draw(st.integers(0, vocab - 1))] = True
    rows = 3
    logits = torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed % 1000)) * 3
    params = _params(rows, temperature, top_k, top_p, min_p, seeds=[seed, seed + 1, seed + 2], steps=[0, 7, 2**33])
    tokens, logprobs = sample(logits, params, pack_bitmask(allowed.expand(rows, -1)))
    for token in tokens.tolist():
        assert 0 <= token < vocab and bool(allowed[0, token])
    assert torch.isfinite(logprobs).all()


def test_fixed_seed_is_reproducible_and_independent_of_batch_composition():
    gen = torch.Generator().manual_seed(11)
    vocab = 60
    logits = torch.randn(5, vocab, generator=gen)
    params = _params(5, temperature=[1.0, 0.7, 1.3, 1.0, 0.9], top_k=[0, 10, 0, 3, 0],
                     top_p=[1.0, 1.0, 0.8, 1.0, 0.95], seeds=[3, 99, 2**40 + 5, 3, 17], steps=[0, 4, 9, 1, 2])
    first, _ = sample(logits, params)
    again, _ = sample(logits, params)
    assert torch.equal(first, again)
    order = torch.tensor([4, 2, 0, 3, 1])
    shuffled, _ = sample(logits[order], params.select(order))
    assert torch.equal(shuffled, first[order])
    for row in range(5):
        alone, _ = sample(logits[row:row + 1], params.select(torch.tensor([row])))
        assert alone.item() == first[row].item()


def test_steps_and_seeds_change_the_draw():
    logits = torch.zeros(64, 50)  # uniform: draws depend only on the noise
    by_step, _ = sample(logits, _params(64, seeds=[7] * 64, steps=list(range(64))))
    by_seed, _ = sample(logits, _params(64, seeds=list(range(64)), steps=[0] * 64))
    assert len(set(by_step.tolist())) > 20 and len(set(by_seed.tolist())) > 20


def _expected_distribution(logits, temperature, top_k, top_p, min_p):
    """Independent float64 computation of the truncated distribution (sort-based, per the contract)."""
    x = logits.double()
    probs = torch.softmax(x / temperature, dim=0)
    order = torch.argsort(x, descending=True, stable=True)
    keep = torch.zeros_like(probs, dtype=torch.bool)
    kept_ids = order[:top_k] if top_k > 0 else order
    keep[kept_ids] = True
    if top_p < 1.0:
        p = torch.where(keep, probs, 0.0)
        p = p / p.sum()
        cumulative = 0.0
        chosen = torch.zeros_like(keep)
        for idx in order.tolist():
            if not keep[idx]:
                continue
            chosen[idx] = True
            cumulative += p[idx].item()
            if cumulative >= top_p:
                break
        keep = chosen
    keep &= probs / probs.max() >= min_p
    out = torch.where(keep, probs, 0.0)
    return out / out.sum()


@pytest.mark.parametrize(
    "temperature,top_k,top_p,min_p",
    [(1.0, 0, 1.0, 0.0), (0.7, 6, 1.0, 0.0), (1.5, 0, 0.75, 0.0), (1.0, 8, 0.8, 0.0), (1.0, 0, 1.0, 0.2)],
)
def test_sampled_frequencies_match_truncated_softmax_chi_square(temperature, top_k, top_p, min_p):
    vocab, draws = 12, 3000
    logits = torch.linspace(-2.0, 1.5, vocab)[torch.randperm(vocab, generator=torch.Generator().manual_seed(2))]
    expected = _expected_distribution(logits, temperature, top_k, top_p, min_p)
    params = _params(draws, temperature, top_k, top_p, min_p, seeds=[1234] * draws, steps=list(range(draws)))
    tokens, _ = sample(logits.expand(draws, vocab).contiguous(), params)
    counts = torch.bincount(tokens, minlength=vocab).double()
    support = expected > 0
    assert counts[~support].sum() == 0, "a token outside top-k/top-p/min-p was sampled"
    exp_counts = expected[support] * draws
    stat = ((counts[support] - exp_counts) ** 2 / exp_counts).sum()
    dof = int(support.sum()) - 1
    p_value = torch.special.gammaincc(torch.tensor(dof / 2.0, dtype=torch.float64), stat / 2).item()
    assert p_value > P_VALUE_FLOOR, f"chi-square {stat.item():.1f} with {dof} dof, p={p_value:.2e}"
