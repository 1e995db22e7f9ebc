"""Start-up warm-up launches every kernel variant the engine uses: after it, serving requests of every
kind (greedy, sampled, top-k/top-p, logprobs, n > 1, JSON-schema constrained, long chunked prompts,
batches of 1 to max_num_seqs sequences) adds no variant. Counted at the kernel dispatch point."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork import kernels  # noqa: E402
from formwork.core import warmup  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.kernels import dispatch  # noqa: E402
from formwork.kernels.variants import VariantLog  # noqa: E402

torch.set_num_threads(1)
SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 5}},
          "required": ["a", "b"], "additionalProperties": False}


@pytest.fixture
def fresh_log(monkeypatch):
    """A variant log of this test alone (the process-wide one holds other tests' variants)."""
    log = VariantLog()
    monkeypatch.setattr(dispatch, "variant_log", log)
    monkeypatch.setattr(warmup, "variant_log", log)
    return log


def _serve_everything(engine: LLMEngine, max_num_seqs: int) -> None:
    rng = torch.Generator().manual_seed(0)
    # outputs long enough that every sequence is still decoding when the last prompt is in
    kinds = [SamplingParams(temperature=0.0, max_tokens=24, ignore_eos=True),
             SamplingParams(temperature=0.9, seed=1, max_tokens=24, ignore_eos=True),
             SamplingParams(temperature=0.7, top_k=20, top_p=0.8, seed=2, max_tokens=24, ignore_eos=True),
             SamplingParams(temperature=0.0, logprobs=3, max_tokens=24, ignore_eos=True),
             SamplingParams(temperature=1.0, n=2, seed=3, max_tokens=24, ignore_eos=True),
             SamplingParams(temperature=0.0, max_tokens=40, structured_outputs={"json": SCHEMA})]
    vocab = engine.vocab_size
    # one request alone, then the whole batch at once (decode batches shrink from max_num_seqs to 1)
    engine.add_request("alone", [5, 6, 7], kinds[0])
    while engine.has_unfinished_requests():
        engine.step()
    for i in range(max_num_seqs):
        high = 90 if i % 16 == 0 else 12  # a few prompts span chunked-prefill steps
        length = int(torch.randint(1, high, (1,), generator=rng))
        prompt = torch.randint(3, vocab, (length,), generator=rng).tolist()
        engine.add_request(str(i), prompt, kinds[i % len(kinds)])
    while engine.has_unfinished_requests():
        for out in engine.step():
            assert out.error is None, out.error


@pytest.mark.parametrize("model", ["llama", "mistral_swa"])
def test_no_variant_is_first_launched_after_warm_up(model, fresh_log):
    engine = LLMEngine(tiny_model_dir(model), warmup=True, max_num_seqs=64, max_num_batched_tokens=256,
                       block_size=4, dtype="float32")
    warmed = fresh_log.seen()
    ops = {key[0] for key in warmed}
    assert {"paged_attention", "write_kv_cache", "sample", "rms_norm", "silu_and_mul", "rotary_embedding"} <= ops
    assert {key[3] for key in warmed if key[0] == "rms_norm"} == {False, True}  # first layer's and fused-add norms
    splits = {key[8].num_splits for key in warmed if key[0] == "paged_attention"}
    assert 1 in splits and max(splits) > 1  # both decode regimes (small batches split the KV)
    _serve_everything(engine, 64)
    assert fresh_log.seen() == warmed
    assert sum(fresh_log.launches.values()) > 2 * len(warmed)  # serving did launch kernels


def test_a_variant_after_warm_up_is_reported(fresh_log, caplog):
    """The log can fail: a launch the warm-up did not cover shows up as a new variant with a warning."""
    LLMEngine(tiny_model_dir("llama"), warmup=True, max_num_seqs=4, dtype="float32")
    warmed = fresh_log.seen()
    logits = torch.randn(3, 50)
    params = kernels.SamplingTensors.from_lists([0.0] * 3, [0] * 3, [1.0] * 3, [0.0] * 3, [0] * 3, [0] * 3)
    with caplog.at_level(logging.WARNING, logger="formwork.kernels.variants"):
        kernels.sample(logits, params, torch.full((3, 2), -1, dtype=torch.int32))
    new = fresh_log.seen() - warmed
    assert [key[:3] for key in new] == [("sample", torch.float32, True)]
    assert "first launched after warm-up" in caplog.text


def test_warm_up_leaves_no_trace_in_the_engine(fresh_log):
    """Same outputs, metrics and free pool with and without warm-up."""
    params = SamplingParams(temperature=0.8, max_tokens=6, ignore_eos=True)
    results = []
    for flag in (False, True):
        engine = LLMEngine(tiny_model_dir("llama"), warmup=flag, max_num_seqs=8, dtype="float32", seed=5)
        assert engine.block_manager.num_used_blocks == 0
        assert engine.metrics_snapshot()["formwork:generation_tokens_total"] == 0
        engine.add_request("r", [5, 6, 7, 8], params)  # unseeded: its seed comes from the engine's RNG
        outs = []
        while engine.has_unfinished_requests():
            outs += engine.step()
        results.append(outs[-1].outputs[0].token_ids)
    assert results[0] == results[1]


def test_warm_up_fits_a_tiny_pool(fresh_log):
    engine = LLMEngine(tiny_model_dir("llama"), warmup=True, num_gpu_blocks=2, block_size=4, max_num_seqs=4,
                       dtype="float32")
    assert engine.max_model_len == 8
    engine.add_request("r", [5, 6, 7], SamplingParams(temperature=0.0, max_tokens=4, ignore_eos=True))
    while engine.has_unfinished_requests():
        engine.step()
    assert {key[0] for key in fresh_log.seen()} >= {"paged_attention", "write_kv_cache", "sample"}
