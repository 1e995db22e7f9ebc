"""The torch reference sampler draws noise only where it can matter: its tokens must equal a brute-force
Gumbel-max that draws Philox noise for every token of the vocabulary (as the Triton kernel does)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import random_bitmask  # noqa: E402

from formwork.kernels import SamplingTensors, reference  # noqa: E402
from formwork.kernels.reference.bitmask import unpack_bitmask  # noqa: E402
from formwork.kernels.reference.philox import philox_randint, philox_words  # noqa: E402


def _brute_force_row(x: torch.Tensor, temperature, top_k: int, top_p, min_p: float, seed: int, step: int) -> int:
    """Contract semantics with noise for all tokens: truncation by full sort, then argmax of s + G."""
    vocab = x.shape[0]
    row_max = x.max()
    if temperature.item() == 0.0:
        return int(x.argmax())
    scaled = (x - row_max) * (1.0 / temperature)
    keep = x > float("-inf")
    if 0 < top_k < vocab:
        keep &= x >= torch.topk(x, top_k).values[-1]
    rel_prob = torch.exp(scaled)
    if top_p.item() < 1.0:
        kept_prob = torch.where(keep, rel_prob, 0.0)
        sorted_x, order = torch.where(keep, x, float("-inf")).sort(descending=True)
        cut = int((kept_prob[order].cumsum(0) < top_p * kept_prob.sum()).sum())
        keep &= x >= sorted_x[min(cut, vocab - 1)]
    keep &= (rel_prob >= min_p) | (x == row_max)
    words = philox_randint(torch.tensor(seed), torch.arange(vocab), torch.tensor(step))
    uniform = ((words >> 9) * 2 + 1).to(torch.float32) / 16777216.0
    scores = torch.where(keep, scaled - torch.log(-torch.log(uniform)), float("-inf"))
    return int(scores.argmax())


@pytest.mark.parametrize("case", range(12))
def test_pruned_sampling_equals_noise_for_every_token(case):
    rng = random.Random(case)
    gen = torch.Generator().manual_seed(case)
    rows, vocab = 6, rng.choice([700, 3000, 9000])
    # Spreads from near-uniform (every token is a candidate) to peaked (a handful are).
    logits = torch.randn(rows, vocab, generator=gen) * rng.choice([0.3, 2.0, 5.0, 12.0])
    if case % 3 == 0:
        logits = logits.round()  # ties at thresholds and between scores
    params = SamplingTensors.from_lists(
        [rng.choice([0.0, 0.3, 0.7, 1.0, 2.0]) for _ in range(rows)],
        [rng.choice([0, 0, 1, 40, 600, vocab + 1]) for _ in range(rows)],
        [rng.choice([1.0, 1.0, 0.9, 0.5, 0.99995]) for _ in range(rows)],
        [rng.choice([0.0, 0.0, 0.01, 0.2]) for _ in range(rows)],
        [rng.randrange(2**63) for _ in range(rows)],
        [rng.randrange(2**40) for _ in range(rows)],
    )
    allowed, packed = random_bitmask(gen, rows, vocab, rng.choice([0.1, 0.6, 1.0]))
    packed = packed if case % 2 else None
    tokens, _ = reference.sample(logits, params, packed)
    masked = torch.where(allowed, logits, float("-inf")) if packed is not None else logits
    expected = [
        _brute_force_row(masked[r], params.temperature[r], int(params.top_k[r]), params.top_p[r],
                         float(params.min_p[r]), int(params.seeds[r]), int(params.steps[r]))
        for r in range(rows)
    ]
    assert tokens.tolist() == expected


def test_philox_words_broadcast_matches_elementwise():
    seeds = torch.tensor([0, -1, 2**62 + 7, -(2**63)])
    counters = torch.tensor([0, 5, 2**32 - 1, 123456])
    steps = torch.tensor([0, 2**33 + 1, 9, 2**40])
    together = philox_randint(seeds, counters, steps)
    for i in range(4):
        seed, counter, step = (np.uint64(int(t[i]) % 2**64) for t in (seeds, counters, steps))
        alone = philox_words(seed, counter, step)
        assert together[i].item() == int(alone)


@pytest.mark.parametrize("vocab,words", [(129280, None), (100, 2), (95, 3), (32, 1)])
def test_unpack_bitmask_matches_bool_mask(vocab, words):
    gen = torch.Generator().manual_seed(vocab)
    allowed, packed = random_bitmask(gen, 3, vocab, 0.5, words)
    assert torch.equal(unpack_bitmask(packed, vocab), allowed)
    assert torch.equal(unpack_bitmask(packed.t().contiguous().t(), vocab), allowed)  # strided words


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_apply_bitmask_every_float_width_and_strided_rows(dtype):
    gen = torch.Generator().manual_seed(4)
    allowed, packed = random_bitmask(gen, 4, 77, 0.5)
    wide = torch.randn(4, 100, generator=gen).to(dtype)
    wide[0, 10:13] = torch.tensor([-0.0, float("nan"), float("inf")]).to(dtype)
    logits = wide[:, 10:87]  # a strided view into a wider buffer
    expected = torch.where(allowed, logits, float("-inf")).to(dtype)
    untouched = wide[:, 87:].clone()
    reference.apply_token_bitmask(logits, packed)
    assert torch.equal(logits.isnan(), expected.isnan())
    assert torch.equal(torch.nan_to_num(logits), torch.nan_to_num(expected))
    assert torch.equal(wide[:, 87:], untouched)


@pytest.mark.parametrize("case", range(6))
def test_batched_rows_equal_each_row_sampled_alone(case):
    """The reference samples all rows at once (padded top-p blocks, one flat Gumbel-max): a row's token
    and logprob must not depend on the other rows, whose candidate counts and truncations differ."""
    rng = random.Random(100 + case)
    gen = torch.Generator().manual_seed(100 + case)
    rows, vocab = 9, rng.choice([300, 2000])
    spread = torch.tensor([rng.choice([0.05, 1.0, 4.0, 20.0]) for _ in range(rows)]).unsqueeze(1)
    logits = torch.randn(rows, vocab, generator=gen) * spread  # some rows with every token a candidate
    if case % 2:
        logits = logits.round()
    params = SamplingTensors.from_lists(
        [rng.choice([0.0, 0.5, 1.0, 1.5]) for _ in range(rows)],
        [rng.choice([0, 1, 7, 300, vocab]) for _ in range(rows)],
        [rng.choice([1.0, 0.9, 0.3, 0.9999]) for _ in range(rows)],
        [rng.choice([0.0, 0.05]) for _ in range(rows)],
        [rng.randrange(-(2**63), 2**63) for _ in range(rows)],
        [rng.randrange(2**40) for _ in range(rows)],
    )
    allowed, packed = random_bitmask(gen, rows, vocab, rng.choice([0.2, 1.0]))
    tokens, logprobs = reference.sample(logits, params, packed)
    for r in range(rows):
        one = SamplingTensors(*(t[r:r + 1] for t in (params.temperature, params.top_k, params.top_p, params.min_p,
                                                     params.seeds, params.steps)))
        token, logprob = reference.sample(logits[r:r + 1], one, packed[r:r + 1])
        assert (token.item(), logprob.item()) == (tokens[r].item(), logprobs[r].item()), f"row {r}"
