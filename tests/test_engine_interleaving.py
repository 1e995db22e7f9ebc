"""Random arrivals and cancellations on a real tiny model with a tiny KV pool: every request that
finishes has exactly the greedy tokens it gets when run alone, and the pool always drains."""

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

PROMPTS = [
    "Hello",
    "The quick brown fox",
    "The quick brown fox jumps over the lazy dog.",
    '{"name": "Alice", "age": 30}',
    "The cat sat on the mat and looked at the moon.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9",
]
MAX_TOKENS = [3, 9]


@pytest.fixture(scope="module")
def solo():
    """Greedy tokens of every (prompt, max_tokens) pair run alone on a roomy engine."""
    engine = LLMEngine(tiny_model_dir("llama"), block_size=4, enable_prefix_caching=False)
    results = {}
    for p, prompt in enumerate(PROMPTS):
        for max_tokens in MAX_TOKENS:
            engine.add_request("solo", prompt, SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True))
            while engine.has_unfinished_requests():
                for out in engine.step():
                    if out.finished:
                        results[p, max_tokens] = out.outputs[0].token_ids
    return results


@settings(deadline=None, max_examples=12)
@given(seed=st.integers(0, 2**32 - 1), num_blocks=st.integers(10, 24), budget=st.integers(4, 40),
       caching=st.booleans(), chunked=st.booleans())
def test_interleaved_requests_match_solo_runs(solo, seed, num_blocks, budget, caching, chunked):
    rng = random.Random(seed)
    engine = LLMEngine(tiny_model_dir("llama"), block_size=4, num_gpu_blocks=num_blocks, max_num_seqs=4,
                       max_num_batched_tokens=budget, enable_prefix_caching=caching,
                       enable_chunked_prefill=chunked)
    expected, finished, aborted = {}, {}, set()
    for step in range(200):
        if step < 20 and rng.random() < 0.5:
            key = (rng.randrange(len(PROMPTS)), rng.choice(MAX_TOKENS))
            request_id = f"r{step}"
            engine.add_request(request_id, PROMPTS[key[0]],
                               SamplingParams(temperature=0, max_tokens=key[1], ignore_eos=True),
                               priority=rng.randint(0, 1))
            expected[request_id] = solo[key]
        live = [rid for rid in expected if rid not in finished and rid not in aborted]
        if live and rng.random() < 0.08:
            victim = rng.choice(live)
            engine.abort_request(victim)
            aborted.add(victim)
        for out in engine.step():
            if out.finished:
                finished[out.request_id] = out.outputs[0].token_ids
        if step >= 20 and not engine.has_unfinished_requests():
            break
    assert not engine.has_unfinished_requests()
    assert engine.block_manager.num_used_blocks == 0
    assert set(finished) | aborted == set(expected)
    for request_id, tokens in finished.items():
        assert tokens == expected[request_id], request_id
