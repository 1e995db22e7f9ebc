"""Every constrained output of the engine is valid: on a tiny random Llama (small byte-level BPE) and on
a tiny random Llama with the real 129k DeepSeek vocabulary, 50 JSON Schemas plus regexes, an EBNF
grammar and choices, batched with unconstrained requests, greedy and temperature 1.0, jump-forward on
and off, with preemption forced by a small KV pool. Random models rarely finish a document: an output
cut by `max_tokens` must say `length` and be a prefix the grammar accepts; a `stop` output must
validate (jsonschema, re.fullmatch, lark, choice membership)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_structured import check_outputs, make_requests, run_requests  # noqa: E402
from tiny_models import deepseek_tiny_model, tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402


@pytest.fixture(scope="module", params=[True, False], ids=["jump", "nojump"])
def small_engine(request):
    # 24 blocks of 8 tokens for up to 16 running sequences of ~30 tokens: preemption is certain
    return LLMEngine(tiny_model_dir("llama"), block_size=8, num_gpu_blocks=24, max_num_seqs=16,
                     enable_jump_forward=request.param)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "t1"])
def test_small_vocab_outputs_validate(small_engine, temperature):
    before = small_engine.metrics.num_preemptions
    requests = make_requests(temperature, max_tokens=24)
    done = run_requests(small_engine, requests, compiled_first=True)
    reasons = check_outputs(small_engine, done, requests)
    assert small_engine.metrics.num_preemptions > before, "the KV pool was meant to force preemption"
    assert reasons.get("stop", 0) >= 5, reasons  # choices, consts, enums do finish
    stats = small_engine.structured_output.stats
    assert (stats.num_jump_forward_tokens > 0) == small_engine.config.enable_jump_forward


@pytest.fixture(scope="module")
def deepseek_engine(tmp_path_factory):
    # 12 blocks of 8 tokens for up to 10 running sequences of ~14 tokens (2 blocks each): preemption is certain
    path = deepseek_tiny_model(tmp_path_factory.mktemp("deepseek-tiny"), max_position_embeddings=128)
    return LLMEngine(path, block_size=8, num_gpu_blocks=12, max_num_seqs=10, enable_jump_forward=True)


def test_deepseek_vocab_outputs_validate(deepseek_engine):
    assert deepseek_engine.vocab_size == 129280
    requests = make_requests(None, max_tokens=10)  # even requests at temperature 1.0, odd ones greedy
    done = run_requests(deepseek_engine, requests, compiled_first=True)  # all at once: the pool must preempt
    check_outputs(deepseek_engine, done, requests)
    assert deepseek_engine.metrics.num_preemptions > 0
    assert deepseek_engine.structured_output.stats.num_jump_forward_tokens > 0
