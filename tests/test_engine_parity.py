"""Greedy outputs equal Hugging Face transformers' `generate`, token for token, on tiny random
Llama / Qwen2 / Mistral checkpoints: single and batched, prefix cache on/off, chunked prefill on/off,
and with preemption forced by a tiny KV pool."""

import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import load_hf_model, tiny_model_dir  # noqa: E402

from formwork.core.llm import LLM  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

MAX_NEW = 10
PROMPTS = [
    "Hello",
    "The quick brown fox jumps over the lazy dog.",
    '{"name": "Alice", "age": 30, "tags": ["a", "b"], "ok": true}',
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 3.14 -7 1e5 and the cat sat on the mat and looked at the moon.",
    "The quick brown fox jumps over the lazy cat.",  # shares a prefix with prompt 1
]
GREEDY = SamplingParams(temperature=0.0, max_tokens=MAX_NEW, ignore_eos=True)


_REFERENCE: dict[str, tuple[Path, list[list[int]]]] = {}


def reference(name):
    """(model dir, HF greedy continuations of PROMPTS) for a tiny preset, computed once."""
    if name not in _REFERENCE:
        path = tiny_model_dir(name)
        hf = load_hf_model(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
        expected = []
        for prompt in PROMPTS:
            ids = torch.tensor([tokenizer(prompt).input_ids])
            with torch.no_grad():
                out = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=MAX_NEW,
                                  do_sample=False, eos_token_id=None, pad_token_id=0)
            expected.append(out[0, ids.shape[1]:].tolist())
        _REFERENCE[name] = (path, expected)
    return _REFERENCE[name]


ENGINE_SETUPS = {
    "default": dict(),
    "no_prefix_cache": dict(enable_prefix_caching=False),
    "chunked_tiny_budget": dict(max_num_batched_tokens=13, block_size=4),
    "no_chunked_prefill": dict(enable_chunked_prefill=False, max_num_batched_tokens=16),
    "preemption_tiny_pool": dict(num_gpu_blocks=20, block_size=4),
}


MODELS = ["llama", "qwen2", "mistral_swa"]


@pytest.mark.parametrize("name", MODELS)
def test_batched_greedy_matches_hf(name):
    path, expected = reference(name)
    for setup in ENGINE_SETUPS:
        llm = LLM(path, **ENGINE_SETUPS[setup])
        outputs = llm.generate(PROMPTS, GREEDY, use_tqdm=False)
        assert [o.outputs[0].token_ids for o in outputs] == expected, setup
        assert all(o.outputs[0].finish_reason == "length" for o in outputs)
        engine = llm.engine
        assert engine.block_manager.num_used_blocks == 0
        if setup == "preemption_tiny_pool":
            assert engine.metrics_snapshot()["formwork:num_preemptions_total"] > 0
        if setup == "default":
            for out, want in zip(outputs, expected):
                assert out.outputs[0].text == llm.tokenizer.decode(want, skip_special_tokens=True)


@pytest.mark.parametrize("name", MODELS)
def test_single_requests_then_prefix_hits_match_hf(name):
    path, expected = reference(name)
    llm = LLM(path, block_size=4)
    for prompt, want in list(zip(PROMPTS, expected))[:3]:
        assert llm.generate(prompt, GREEDY, use_tqdm=False)[0].outputs[0].token_ids == want
    # Again as a batch: whole prompts now come from the prefix cache (all but the last token).
    again = llm.generate(PROMPTS, GREEDY, use_tqdm=False)
    assert [o.outputs[0].token_ids for o in again] == expected
    assert llm.engine.metrics_snapshot()["formwork:prefix_cache_hits_total"] > 0
