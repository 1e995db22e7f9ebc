"""The sampler's per-step shortcuts (issue 23) change no token: logprobs skipped when no row reports them,
row maxima through numpy on the CPU, row parameters reused while the batch holds the same sequences, and
the Philox words of the Gumbel noise computed in C."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_kernels import pack_bitmask  # noqa: E402

import formwork.core.sampler as sampler_module  # noqa: E402
from formwork.core.sampler import Sampler  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.core.sequence import Request  # noqa: E402
from formwork.kernels import SamplingTensors, reference  # noqa: E402
from formwork.kernels.reference.philox import philox_words  # noqa: E402

VOCAB = 37


@st.composite
def _batches(draw):
    rows = draw(st.integers(1, 6))
    # integer logits make ties at the row maximum common; -inf entries are masked tokens
    values = draw(st.lists(st.lists(st.sampled_from([-2.0, 0.0, 1.0, 3.0, 3.0, float("-inf")]),
                                    min_size=VOCAB, max_size=VOCAB), min_size=rows, max_size=rows))
    allowed = draw(st.lists(st.lists(st.booleans(), min_size=VOCAB, max_size=VOCAB), min_size=rows, max_size=rows))
    params = SamplingTensors.from_lists(
        [draw(st.sampled_from([0.0, 0.5, 1.0])) for _ in range(rows)],
        [draw(st.sampled_from([0, 3, VOCAB + 2])) for _ in range(rows)],
        [draw(st.sampled_from([1.0, 0.9, 0.5])) for _ in range(rows)],
        [draw(st.sampled_from([0.0, 0.1])) for _ in range(rows)],
        [draw(st.integers(0, 2**63 - 1)) for _ in range(rows)],
        [draw(st.integers(0, 1000)) for _ in range(rows)],
    )
    padded = [row + [False] * (64 - VOCAB) for row in allowed]  # whole 32-bit words
    return torch.tensor(values), pack_bitmask(torch.tensor(padded)), params


@settings(max_examples=150, deadline=None)
@given(_batches())
def test_tokens_are_the_same_without_logprobs(batch):
    logits, bitmask, params = batch
    tokens, logprobs = reference.sample(logits, params, bitmask)
    alone, none = reference.sample(logits, params, bitmask, with_logprobs=False)
    assert none is None and logprobs is not None
    assert alone.tolist() == tokens.tolist()
    unmasked, _ = reference.sample(logits, params)
    assert reference.sample(logits, params, with_logprobs=False)[0].tolist() == unmasked.tolist()


@settings(max_examples=150, deadline=None)
@given(_batches())
def test_greedy_rows_take_the_first_maximum_as_torch_does(batch):
    logits, _, params = batch
    greedy = SamplingTensors.from_lists([0.0] * len(logits), [0] * len(logits), [1.0] * len(logits),
                                        [0.0] * len(logits), [0] * len(logits), [0] * len(logits))
    tokens, logprobs = reference.sample(logits, greedy)
    row_max, first = logits.max(dim=1)
    allowed = row_max > float("-inf")
    assert tokens.tolist() == torch.where(allowed, first, -1).tolist()
    expected = torch.where(allowed, row_max - torch.logsumexp(logits, dim=1), float("-inf"))
    assert torch.allclose(logprobs, expected, atol=1e-5)


def _seqs(params: list[SamplingParams], prompt_len: int = 3) -> list:
    return [Request(str(i), None, list(range(1, prompt_len + 1)), p, arrival_time=0.0, seeds=[100 + i]).seqs[0]
            for i, p in enumerate(params)]


def test_row_parameters_follow_the_batch():
    """One sampler over steps whose batch changes (a sequence leaves, one joins, the order changes) draws
    what a fresh sampler draws for each step's batch."""
    params = [SamplingParams(temperature=0.9, top_p=0.8), SamplingParams(temperature=0),
              SamplingParams(temperature=1.0, top_k=4, logprobs=2), SamplingParams(temperature=0.7, min_p=0.05)]
    seqs = _seqs(params)
    logits = torch.randn(4, VOCAB, generator=torch.Generator().manual_seed(0)) * 3
    sampler = Sampler(VOCAB, [0])
    batches = [[0, 1, 2, 3], [0, 1, 2, 3], [0, 2, 3], [3, 2, 0], [1, 3]]
    reused = 0
    for step, rows in enumerate(batches):
        batch = [seqs[r] for r in rows]
        before = sampler._rows
        out = sampler(logits[rows].clone(), batch)
        reused += sampler._rows is before
        fresh = Sampler(VOCAB, [0])(logits[rows].clone(), batch)
        assert out.token_ids == fresh.token_ids and out.top_logprobs == fresh.top_logprobs
        assert out.logprobs == fresh.logprobs
        for seq, token in zip(batch, out.token_ids):
            seq.append_token(token, 0.0)  # the next step draws with the next step's noise
    assert reused == 1  # only the repeated batch reuses its rows


def test_reused_row_tensors_rewrite_each_steps_count():
    """While the batch stays, the CPU parameter tensors are reused and only the steps are rewritten in place
    (skipped when every row is greedy, which never reads them)."""
    seqs = _seqs([SamplingParams(temperature=0.8, seed=5), SamplingParams(temperature=0)])
    logits = torch.randn(2, VOCAB, generator=torch.Generator().manual_seed(2))
    sampler = Sampler(VOCAB, [0])
    for step in range(4):
        out = sampler(logits.clone(), seqs)
        assert sampler._rows.tensors(seqs, torch.device("cpu")).steps.tolist() == [step, step]
        assert out.token_ids == Sampler(VOCAB, [0])(logits.clone(), seqs).token_ids
        for seq, token in zip(seqs, out.token_ids):
            seq.append_token(token, 0.0)
    greedy = _seqs([SamplingParams(temperature=0), SamplingParams(temperature=0)])
    rows = Sampler(VOCAB, [0])._rows_of(greedy)
    first = rows.tensors(greedy, torch.device("cpu"))
    greedy[0].append_token(1, 0.0)
    assert rows.tensors(greedy, torch.device("cpu")) is first and first.steps.tolist() == [0, 0]


def test_logprobs_reported_only_where_asked():
    seqs = _seqs([SamplingParams(temperature=0), SamplingParams(temperature=0.5, logprobs=1)])
    logits = torch.randn(2, VOCAB, generator=torch.Generator().manual_seed(1))
    out = Sampler(VOCAB, [0])(logits.clone(), seqs)
    expected = torch.log_softmax(logits, dim=1)[torch.arange(2), torch.tensor(out.token_ids)]
    assert torch.allclose(torch.tensor(out.logprobs), expected, atol=1e-6)
    silent = Sampler(VOCAB, [0])(logits[:1].clone(), seqs[:1])
    assert silent.token_ids == out.token_ids[:1] and silent.logprobs == [0.0]


def _philox_first_word(seed: int, counter_lo: int, counter_hi: int) -> int:
    """Philox-4x32-10 from its definition, one round at a time in Python integers (the test's oracle)."""
    mask = 2**32 - 1
    key = [seed & mask, seed >> 32]
    counter = [counter_lo & mask, counter_hi & mask, 0, 0]
    for _ in range(10):
        a, b = counter[0] * 0xD2511F53, counter[2] * 0xCD9E8D57
        counter = [(b >> 32) ^ counter[1] ^ key[0], b & mask, (a >> 32) ^ counter[3] ^ key[1], a & mask]
        key = [(key[0] + 0x9E3779B9) & mask, (key[1] + 0xBB67AE85) & mask]
    return counter[0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
                min_size=1, max_size=40))
def test_philox_words_in_c_follow_the_definition(triples):
    seeds, lows, highs = (np.array(column, dtype=np.uint64) for column in zip(*triples))
    assert philox_words(seeds, lows, highs).tolist() == [_philox_first_word(*t) for t in triples]
    # broadcast operands: one seed and step for a row of token ids, as the sampler draws
    row = philox_words(seeds[0], lows[:, None], highs[0])
    assert row.shape == (len(triples), 1)
    assert row[:, 0].tolist() == [_philox_first_word(triples[0][0], t[1], triples[0][2]) for t in triples]


@settings(max_examples=100, deadline=None)
@given(_batches(), st.booleans(), st.booleans())
def test_greedy_cpu_batches_take_the_references_tokens_without_the_kernel(batch, masked, blank):
    """A batch of greedy rows without logprobs is sampled by one argmax in the sampler: the same tokens as
    the reference kernel at temperature 0 (first maximum, -1 for a row that allows nothing), masks included."""
    logits, bitmask, _ = batch
    if blank:
        logits[0] = float("-inf")  # a row that allows nothing
    rows = len(logits)
    seqs = _seqs([SamplingParams(temperature=0)] * rows)
    greedy = SamplingTensors.from_lists([0.0] * rows, [0] * rows, [1.0] * rows, [0.0] * rows, [0] * rows, [0] * rows)
    expected = reference.sample(logits, greedy, bitmask if masked else None)[0].tolist()
    sampler = Sampler(VOCAB, [0])
    assert sampler._argmax_on_cpu and sampler._rows_of(seqs).argmax_only
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sampler_module, "sample", _no_kernel)
        out = sampler(logits.clone(), seqs, bitmask if masked else None)
    assert out.token_ids == expected
    assert out.logprobs == [0.0] * rows and out.top_logprobs == [None] * rows and out.sampled_ranks == [None] * rows


def _no_kernel(*args, **kwargs):
    raise AssertionError("the kernel ran for a greedy-only batch")


def test_kernel_runs_where_a_row_is_random_or_wants_logprobs(monkeypatch):
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return reference.sample(*args, **kwargs)

    monkeypatch.setattr(sampler_module, "sample", counting)
    logits = torch.randn(2, VOCAB, generator=torch.Generator().manual_seed(3))
    for params in ([SamplingParams(temperature=0), SamplingParams(temperature=0.5)],
                   [SamplingParams(temperature=0), SamplingParams(temperature=0, logprobs=1)]):
        Sampler(VOCAB, [0])(logits.clone(), _seqs(params))
    assert len(calls) == 2
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", "triton")  # a forced backend keeps the kernel call
    assert not Sampler(VOCAB, [0])._argmax_on_cpu
