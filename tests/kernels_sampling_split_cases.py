"""The split-row Triton sampler against the torch reference under TRITON_INTERPRET=1: the same tokens,
logprobs within 1e-5.

Not collected by the main run (no test_ prefix): `test_kernels_sampling_split.py` runs this file in a
subprocess with TRITON_INTERPRET=1 set before triton is imported. Small chunks and candidate counts
(`chunk`, `top_k_max`) keep the interpreter fast and make chunk boundaries, full candidate slots and ties
beyond them common.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

if os.environ.get("TRITON_INTERPRET") != "1":  # pragma: no cover - guarded by the subprocess wrapper
    raise RuntimeError("run through tests/test_kernels_sampling_split.py (needs TRITON_INTERPRET=1 before import)")

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import pack_bitmask, random_bitmask  # noqa: E402

from formwork.kernels import SamplingTensors, reference  # noqa: E402
from formwork.kernels.triton import sampling_split  # noqa: E402


def _params(rows, temperature, top_k, top_p, min_p, seed=0) -> SamplingTensors:
    rng = random.Random(seed)

    def column(value):
        return list(value) if isinstance(value, list) else [value] * rows
    return SamplingTensors.from_lists(column(temperature), column(top_k), column(top_p), column(min_p),
                                      [rng.randrange(2**62) for _ in range(rows)],
                                      [rng.randrange(2**34) for _ in range(rows)])


def _assert_matches_reference(logits, params, bitmask, chunk, top_k_max):
    tokens, logprobs = sampling_split.sample(logits, params, bitmask, chunk=chunk, top_k_max=top_k_max)
    expected_tokens, expected_logprobs = reference.sample(logits, params, bitmask)
    assert tokens.tolist() == expected_tokens.tolist()
    torch.testing.assert_close(logprobs, expected_logprobs, atol=1e-5, rtol=1e-5)


# One row per path: greedy, temperature, min-p, top-k 1 / 5 / top_k_max / over it (streamed), top-k with
# top-p and min-p, top-p alone, top_k >= vocab (off), temperature 0 with top-k set.
PATHS = dict(
    temperature=[0.0, 0.7, 1.0, 0.8, 1.3, 0.9, 0.6, 1.0, 0.8, 1.1, 0.0],
    top_k=[0, 0, 0, 1, 5, 16, 17, 12, 0, 10_000, 7],
    top_p=[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.9, 1.0, 0.5],
    min_p=[0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0, 0.05, 0.0, 0.0, 0.0],
)


@pytest.mark.parametrize("vocab,chunk,dtype,integer_logits,masked", [
    (640, 64, torch.float32, False, False),     # a multiple of the chunk
    (641, 64, torch.float32, True, True),       # one token into a last chunk; ties everywhere
    (1000, 128, torch.float16, False, True),
    (777, 32, torch.bfloat16, True, False),     # chunk = 2 * top_k_max
    (400, 64, torch.float32, True, True),
])
def test_every_path_matches_reference(vocab, chunk, dtype, integer_logits, masked):
    rows = len(PATHS["top_k"])
    gen = torch.Generator().manual_seed(vocab)
    logits = torch.randn(rows, vocab, generator=gen) * 3
    if integer_logits:
        logits = logits.round()
    bitmask = random_bitmask(gen, rows, vocab, 0.5)[1] if masked else None
    _assert_matches_reference(logits.to(dtype), _params(rows, **PATHS, seed=vocab), bitmask, chunk, 16)


def test_default_launch_with_top_k_50_and_128():
    rows, vocab = 4, 5000  # chunk 4096: two chunks, the second one short
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(rows, vocab, generator=gen) * 4
    params = _params(rows, [0.8, 0.8, 1.0, 0.7], [50, 128, 129, 50], [0.9, 0.95, 1.0, 1.0], [0.0, 0.05, 0.0, 0.0])
    _, bitmask = random_bitmask(gen, rows, vocab, 0.5)
    _assert_matches_reference(logits, params, bitmask, None, None)


def test_ties_beyond_the_candidate_slots_stream_the_row():
    # Every logit equal: each chunk holds 64 tokens tied at its floor but keeps 16, and the 5th largest
    # is that tie, so the row streams; the draw is over the whole row.
    rows, vocab = 3, 300
    logits = torch.zeros(rows, vocab)
    logits[1, 10] = 1.0  # one token above the tie: the 5th largest is still the tied value
    logits[2, :4] = 2.0  # four above it
    params = _params(rows, 1.0, 5, [1.0, 0.5, 1.0], 0.0, seed=11)
    tokens, _ = sampling_split.sample(logits, params, None, chunk=64, top_k_max=16)
    _assert_matches_reference(logits, params, None, 64, 16)
    assert any(token % 64 >= 16 for token in tokens.tolist())  # beyond a chunk's candidate slots


def test_rows_allowing_one_token_or_nothing():
    rows, vocab = 4, 200
    allowed = torch.zeros(rows, 224, dtype=torch.bool)
    allowed[0, 150] = True   # one token, in the last chunk
    allowed[2, 3] = True
    allowed[3, :] = True
    logits = torch.randn(rows, vocab, generator=torch.Generator().manual_seed(4))
    params = _params(rows, [0.9, 1.0, 0.0, 0.8], [5, 5, 0, 3], [0.9, 1.0, 1.0, 0.7], 0.0)
    tokens, logprobs = sampling_split.sample(logits, params, pack_bitmask(allowed), chunk=64, top_k_max=16)
    assert tokens.tolist()[:3] == [150, -1, 3]
    assert logprobs[1].item() == float("-inf") and logprobs[0].item() == 0.0
    _assert_matches_reference(logits, params, pack_bitmask(allowed), 64, 16)


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(
    vocab=st.integers(20, 700),
    rows=st.integers(1, 3),
    chunk_and_slots=st.sampled_from([(32, 8), (64, 16), (64, 64), (128, 32)]),
    scale=st.sampled_from([0.5, 3.0, 12.0]),
    integer_logits=st.booleans(),
    masked_share=st.sampled_from([None, 0.05, 0.5, 0.95]),
    data=st.data(),
)
def test_random_cases_match_reference(vocab, rows, chunk_and_slots, scale, integer_logits, masked_share, data):
    chunk, top_k_max = chunk_and_slots
    gen = torch.Generator().manual_seed(data.draw(st.integers(0, 2**31)))
    logits = torch.randn(rows, vocab, generator=gen) * scale
    if integer_logits:
        logits = logits.round()
    pick = st.lists  # one value per row
    params = _params(
        rows,
        data.draw(pick(st.sampled_from([0.0, 0.3, 0.8, 1.0, 2.0]), min_size=rows, max_size=rows)),
        data.draw(pick(st.sampled_from([0, -1, 1, 2, top_k_max, top_k_max + 1, 40, vocab]), min_size=rows,
                       max_size=rows)),
        data.draw(pick(st.sampled_from([1.0, 1.0, 0.95, 0.6, 0.2]), min_size=rows, max_size=rows)),
        data.draw(pick(st.sampled_from([0.0, 0.0, 0.05, 0.3]), min_size=rows, max_size=rows)),
        seed=data.draw(st.integers(0, 1000)),
    )
    bitmask = None if masked_share is None else random_bitmask(gen, rows, vocab, masked_share)[1]
    _assert_matches_reference(logits, params, bitmask, chunk, top_k_max)


def _covered_by_candidates(logits: torch.Tensor, temperature: float, top_p: float, chunk: int, top_k_max: int) -> bool:
    """Whether the tokens >= the highest chunk floor (each chunk's top_k_max-th largest) hold top_p of the
    row's mass at `temperature`: the split sampler then draws a top-p row without streaming it."""
    floor = max(part.topk(min(top_k_max, part.numel())).values[-1].item() for part in logits.split(chunk))
    relative = torch.exp((logits - logits.max()) / temperature)
    return relative[logits >= floor].sum().item() >= top_p * relative.sum().item()


@pytest.mark.parametrize("masked", [False, True])
def test_top_p_without_top_k_peaked_rows_from_candidates_flat_rows_streamed(masked):
    rows, vocab, chunk, top_k_max = 6, 700, 64, 16
    gen = torch.Generator().manual_seed(21)
    scales = [12.0, 8.0, 5.0, 0.02, 0.05, 0.0]  # peaked rows first, then flat ones (the last: all tied)
    logits = torch.randn(rows, vocab, generator=gen) * torch.tensor(scales).unsqueeze(1)
    params = _params(rows, [0.8, 1.0, 0.7, 1.0, 0.9, 1.0], 0, [0.9, 0.95, 0.5, 0.9, 0.6, 0.3],
                     [0.0, 0.02, 0.0, 0.0, 0.0, 0.0], seed=5)
    bitmask = random_bitmask(gen, rows, vocab, 0.3)[1] if masked else None
    allowed = logits.clone()
    if masked:
        reference.apply_token_bitmask(allowed, bitmask)
    covered = [_covered_by_candidates(row, t, p, chunk, top_k_max)
               for row, t, p in zip(allowed, params.temperature.tolist(), params.top_p.tolist())]
    # both paths run; the all-tied row is covered, but its ties at F overflow the slots, so it streams too
    assert covered == [True, True, True, False, False, True]
    _assert_matches_reference(logits, params, bitmask, chunk, top_k_max)
