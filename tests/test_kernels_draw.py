"""The reference sampler's C draw (kernels/native/draw_rows.c, top_p.c): the bucketed top-p threshold
equals the sort-based definition (ties, masses on float rounding boundaries), and the drawn tokens equal a
Gumbel-max with float32 noise for every token, near ties included."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from test_kernels_reference_sampling import _brute_force_row  # noqa: E402

from formwork.kernels import SamplingTensors, reference  # noqa: E402
from formwork.kernels._draw import draw_rows, top_p_threshold, use_simd  # noqa: E402
from formwork.kernels.reference.philox import gumbel_noise  # noqa: E402
from formwork.kernels.reference.sampling import NEVER_WINS  # noqa: E402


def _sorted_threshold(xs: np.ndarray, es: np.ndarray, target: np.float32) -> float:
    """The definition: sort by logit (descending), cumulative mass in float64 rounded to float32; the logit
    where it first reaches the target, else -inf."""
    order = np.argsort(-xs, kind="stable")
    mass = np.cumsum(es[order].astype(np.float64)).astype(np.float32)
    hits = np.flatnonzero(mass >= target)
    return float(xs[order][hits[0]]) if len(hits) else float("-inf")


def _relative(xs: np.ndarray, inv_temperature: float) -> np.ndarray:
    """exp((x - max) * inv_temperature) by torch, one value per distinct logit (equal logits, equal e)."""
    values, where = np.unique(xs, return_inverse=True)
    scaled = (values - xs.max()) * np.float32(inv_temperature)
    return torch.from_numpy(np.maximum(scaled, np.float32(-87.0))).exp().numpy()[where]


@st.composite
def _candidates(draw):
    """(logits, relative probabilities, target): the sizes, value pools and target kinds from hypothesis,
    the values from a numpy generator it seeds (fast for hundreds of candidates)."""
    count = draw(st.integers(1, 400))
    gen = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):  # a few distinct values: ties everywhere, often at the threshold
        pool = draw(st.lists(st.floats(-20, 0, width=32), min_size=1, max_size=6))
        xs = gen.choice(np.array(pool, dtype=np.float32), count)
    else:
        xs = (gen.normal(0, draw(st.sampled_from([0.01, 1.0, 4.0])), count)).astype(np.float32)
    es = _relative(xs, draw(st.sampled_from([0.25, 1.0, 1.25, 4.0])))
    kind = draw(st.sampled_from(["share", "prefix", "prefix_below", "prefix_above", "beyond"]))
    total = torch.from_numpy(es).sum().numpy()
    if kind == "share":
        target = np.float32(draw(st.sampled_from([0.1, 0.5, 0.9, 0.95, 0.99995, 1.0]))) * total
    else:  # a target on (or next to) a prefix mass of the sorted order: the float rounding boundary
        prefix = np.cumsum(np.sort(es)[::-1].astype(np.float64)).astype(np.float32)
        target = prefix[draw(st.integers(0, count - 1))]
        target = {"prefix": target, "prefix_below": np.nextafter(target, np.float32(0)),
                  "prefix_above": np.nextafter(target, np.float32(np.inf)), "beyond": prefix[-1] * 2}[kind]
    return xs, es, np.float32(target)


@settings(max_examples=400, deadline=None)
@given(_candidates())
def test_bucketed_top_p_threshold_equals_the_sorted_definition(case):
    xs, es, target = case
    assert top_p_threshold(xs, es, target) == _sorted_threshold(xs, es, target)


def test_top_p_threshold_of_spread_and_clustered_logits():
    """Thousands of candidates over a wide range with a dense cluster: the crossing bucket holds many."""
    gen = np.random.default_rng(3)
    for spread in (0.001, 1.0, 20.0):
        xs = np.concatenate([gen.normal(0, spread, 5000), np.full(700, 0.25)]).astype(np.float32)
        es = _relative(xs, 1.0)
        for share in (0.3, 0.9, 0.999):
            target = np.float32(share) * torch.from_numpy(es).sum().numpy()
            assert top_p_threshold(xs, es, target) == _sorted_threshold(xs, es, target)


def _row_params(temperature, top_k, top_p, min_p, seed, step) -> SamplingTensors:
    return SamplingTensors.from_lists([temperature], [top_k], [top_p], [min_p], [seed], [step])


@st.composite
def _rows(draw):
    """(logits of one row, its parameters): values from a small pool (ties) plus -inf (masked tokens)."""
    vocab = draw(st.integers(1, 300))
    pool = draw(st.lists(st.floats(-30, 30, width=32), min_size=1, max_size=8)) + [float("-inf")]
    gen = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    logits = torch.from_numpy(gen.choice(np.array(pool, dtype=np.float32), vocab))
    if draw(st.booleans()):
        logits[draw(st.integers(0, vocab - 1))] = 0.0  # at least one allowed token
    params = (draw(st.sampled_from([0.0, 0.3, 1.0, 2.5])), draw(st.sampled_from([0, 1, 2, 7, vocab, vocab + 3])),
              draw(st.sampled_from([1.0, 0.9, 0.5, 0.99995, 0.05])), draw(st.sampled_from([0.0, 0.05, 0.5])),
              draw(st.integers(-(2**63), 2**63 - 1)), draw(st.integers(0, 2**40)))
    return logits, params


@settings(max_examples=300, deadline=None)
@given(_rows())
def test_drawn_token_equals_gumbel_max_with_noise_for_every_token(case):
    """One row at a time (ties, masked and fully masked rows): the C draw's token is the brute-force one."""
    logits, (temperature, top_k, top_p, min_p, seed, step) = case
    params = _row_params(temperature, top_k, top_p, min_p, seed, step)
    token, _ = reference.sample(logits.unsqueeze(0), params)
    if bool((logits == float("-inf")).all()):
        assert token.item() == -1
        return
    expected = _brute_force_row(logits, params.temperature[0], top_k, params.top_p[0], float(params.min_p[0]),
                                seed, step)
    assert token.item() == expected


def _near_tie_logits(seed: int, step: int, offset: float) -> torch.Tensor:
    """Logits of tokens 0 and 1 (T = 1, so s = x - max) whose scores s + G differ by about `offset`
    (token 0's minus token 1's)."""
    noise = gumbel_noise(torch.tensor([seed, seed]), torch.tensor([step, step]), torch.tensor([0, 1]))
    apart = offset - float(noise[0] - noise[1])  # s_0 - s_1
    return torch.tensor([0.0, -apart]) if apart >= 0 else torch.tensor([apart, 0.0])


@pytest.mark.parametrize("offset", [-5e-4, -3e-6, 0.0, 3e-6, 5e-4])
@pytest.mark.parametrize("seed,step", [(7, 3), (2**62 + 5, 11), (-12345, 0)])
def test_near_ties_go_back_to_python_and_match_float32_noise(seed, step, offset):
    """Scores within 1e-3 of each other: the C pass leaves the row open and `_settle` picks the float32
    argmax (lowest id on an exact tie), as drawing float32 noise for every token does."""
    logits = _near_tie_logits(seed, step, offset)
    row_max = np.array([logits.max().item()], dtype=np.float32)
    out = np.empty(1, dtype=np.int64)
    values = logits.unsqueeze(0).numpy()
    ones, zeros = np.ones(1, dtype=np.float32), np.zeros(1, dtype=np.float32)
    open_rows = draw_rows(values, 1, 2, row_max, ones, None, ones, zeros, None, None, np.array([seed]),
                          np.array([step]), NEVER_WINS, out)
    assert open_rows == [(0, (0, 1))]
    params = _row_params(1.0, 0, 1.0, 0.0, seed, step)
    token, _ = reference.sample(logits.unsqueeze(0), params)
    assert token.item() == _brute_force_row(logits, params.temperature[0], 0, params.top_p[0], 0.0, seed, step)


def test_draw_rows_refuses_top_p_without_relative_probabilities():
    values = np.zeros((1, 4), dtype=np.float32)
    one, out = np.ones(1, dtype=np.float32), np.empty(1, dtype=np.int64)
    with pytest.raises(ValueError, match="top-p or min-p without rel"):
        draw_rows(values, 1, 4, np.zeros(1, dtype=np.float32), one, None, one * 0.5, one * 0, None, None,
                  np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), NEVER_WINS, out)
    with pytest.raises(ValueError, match="x holds"):
        draw_rows(values, 2, 4, one, one, None, one, one, None, None, np.zeros(1, dtype=np.int64),
                  np.zeros(1, dtype=np.int64), NEVER_WINS, out)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.integers(1, 500), st.integers(0, 2**32 - 1), st.sampled_from([1.0, 0.9, 0.5]))
def test_the_avx2_noise_draws_the_tokens_of_the_scalar_rounds(rows, vocab, seed, top_p):
    """The noise levels eight at a time (AVX2, where the CPU has it) give every row the scalar rounds' token."""
    gen = np.random.default_rng(seed)
    logits = torch.from_numpy(gen.normal(0, 2, (rows, vocab)).astype(np.float32))
    params = SamplingTensors.from_lists([0.8] * rows, [0] * rows, [top_p] * rows, [0.0] * rows,
                                        gen.integers(-(2**63), 2**63 - 1, rows).tolist(),
                                        gen.integers(0, 2**40, rows).tolist())
    previous = use_simd(False)
    try:
        scalar = reference.sample(logits, params, with_logprobs=False)[0]
        use_simd(True)
        simd = reference.sample(logits, params, with_logprobs=False)[0]
    finally:
        use_simd(previous)
    assert torch.equal(scalar, simd)
