"""The ModelRunner through its paged KV pool: prefill + decode, chunked prefill and mixed batches give the
same logits as one full forward, and a greedy loop reproduces transformers' ``generate``."""

import random
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_model import PagedSim, hf_logits, hf_model, make_runner, model_files  # noqa: E402

from formwork.core.forward_batch import ForwardBatch  # noqa: E402

ATOL = 2e-5


def _tokens(seed: int, length: int, vocab: int = 400) -> list[int]:
    return random.Random(seed).choices(range(vocab), k=length)


@pytest.fixture(scope="module", params=[4, 16], ids=["bs4", "bs16"])
def llama_runner(request):
    return make_runner("llama", num_blocks=48, block_size=request.param)


@pytest.mark.parametrize("variant", ["llama_mqa", "qwen2", "mistral_swa"])
@pytest.mark.parametrize("block_size", [4, 16])
def test_prefill_then_decode_equals_full_forward(variant, block_size):
    runner = make_runner(variant, num_blocks=16, block_size=block_size)
    seq = _tokens(10, 22)
    ref = hf_logits(hf_model(variant), seq)
    sim = PagedSim(runner, [seq], seed=block_size)
    got = sim.step([(0, 9)])  # prefill of 9 tokens, then 13 single-token decode steps
    for _ in range(len(seq) - 9):
        got.update(sim.step([(0, 1)]))
    assert sorted(got) == [(0, p) for p in range(8, 22)]
    for (_, pos), logits in got.items():
        torch.testing.assert_close(logits, ref[pos], atol=ATOL, rtol=1e-5)


def test_chunked_prefill_equals_full_prefill(llama_runner):
    seq = _tokens(11, 30)
    ref = hf_logits(hf_model("llama"), seq)
    sim = PagedSim(llama_runner, [seq], seed=3)
    assert sim.step([(0, 7)], no_logits=frozenset({0})) == {}  # mid chunked prefill: no logits row
    got = sim.step([(0, 10)])  # chunk on top of a 7-token cached prefix (crosses block boundaries)
    got.update(sim.step([(0, 13)]))
    torch.testing.assert_close(got[(0, 16)], ref[16], atol=ATOL, rtol=1e-5)
    torch.testing.assert_close(got[(0, 29)], ref[29], atol=ATOL, rtol=1e-5)


def test_mixed_batch_of_prefills_chunks_and_decodes(llama_runner):
    seqs = [_tokens(20 + i, n) for i, n in enumerate([5, 17, 12, 9])]
    refs = [hf_logits(hf_model("llama"), s) for s in seqs]
    sim = PagedSim(llama_runner, seqs, seed=5)
    got = sim.step([(0, 4), (1, 6), (2, 12)], no_logits=frozenset({1}))
    got.update(sim.step([(3, 9), (0, 1), (1, 8)]))  # a new prefill next to a decode and a chunk
    got.update(sim.step([(1, 3)]))
    for (s, pos), logits in got.items():
        torch.testing.assert_close(logits, refs[s][pos], atol=ATOL, rtol=1e-5)
    assert set(got) == {(0, 3), (2, 11), (3, 8), (0, 4), (1, 13), (1, 16)}


@settings(deadline=None, max_examples=12, derandomize=True)
@given(data=st.data())
def test_any_schedule_matches_full_forward(data):
    """Property: however the tokens of several sequences are split into steps and batched, every logits row
    equals transformers' full-forward logits at that position."""
    runner = _property_runner()
    lengths = data.draw(st.lists(st.integers(1, 20), min_size=1, max_size=4), label="lengths")
    seqs = [_tokens(100 + i * 7 + n, n) for i, n in enumerate(lengths)]
    sim = PagedSim(runner, seqs, seed=data.draw(st.integers(0, 1000), label="pool seed"))
    got = {}
    while any(c < len(s) for c, s in zip(sim.computed, seqs)):
        plan = []
        for s, seq in enumerate(seqs):
            left = len(seq) - sim.computed[s]
            if left and data.draw(st.booleans(), label=f"schedule {s}"):
                plan.append((s, data.draw(st.integers(1, left), label=f"chunk {s}")))
        if not plan:  # nothing drawn: finish the first unfinished sequence in one chunk
            s = next(i for i, seq in enumerate(seqs) if sim.computed[i] < len(seq))
            plan.append((s, len(seqs[s]) - sim.computed[s]))
        got.update(sim.step(plan))
    for s, seq in enumerate(seqs):
        ref = hf_logits(hf_model("qwen2"), seq)
        for (t, pos), logits in got.items():
            if t == s:
                torch.testing.assert_close(logits, ref[pos], atol=ATOL, rtol=1e-5)
        assert (s, len(seq) - 1) in got


_RUNNERS = {}


def _property_runner():
    if "qwen2" not in _RUNNERS:
        _RUNNERS["qwen2"] = make_runner("qwen2", num_blocks=24, block_size=4)
    return _RUNNERS["qwen2"]


def greedy_generate(runner, prompt: list[int], max_new_tokens: int, eos: set[int]) -> list[int]:
    """A minimal engine loop: prefill, then one decode step per token, greedy, stopping at eos."""
    table = list(range(runner.num_blocks - 1, -1, -1))[: -(-(len(prompt) + max_new_tokens) // runner.block_size)]
    logits = runner.forward(ForwardBatch.build([(prompt, 0, table)], runner.block_size, [True]))
    out = []
    while True:
        token = int(logits[0].argmax())
        out.append(token)
        if token in eos or len(out) == max_new_tokens:
            return out
        batch = ForwardBatch.build([([token], len(prompt) + len(out) - 1, table)], runner.block_size, [True])
        logits = runner.forward(batch)


@pytest.mark.parametrize("variant", ["llama", "llama3_rope", "qwen2", "mistral_swa"])
def test_greedy_loop_equals_transformers_generate(variant):
    runner = make_runner(variant, num_blocks=32, block_size=4)
    files = model_files(variant)
    hf = hf_model(variant)
    for prompt in ["The quick brown fox", 'user: {"name": "Al']:
        ids = files.tokenizer(prompt).input_ids
        with torch.no_grad():
            expected = hf.generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False,
                                   attention_mask=torch.ones(1, len(ids), dtype=torch.long))[0, len(ids):].tolist()
        assert greedy_generate(runner, ids, 24, set(files.eos_token_ids)) == expected
