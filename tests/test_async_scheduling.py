"""Async scheduling (`EngineConfig.async_scheduling`): step n+1 is launched on placeholder tokens fed from
step n's sampled ids, and must give exactly the outputs of the synchronous engine. On the CPU every part
runs except the pinned copies and CUDA events of `SampledBatch.start_copy`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import model_runner  # noqa: E402
from formwork.core.config import ConfigError, EngineConfig  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.pending_step import PENDING_TOKEN  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from test_engine_step_inputs import EagerGraphs  # noqa: E402

torch.set_num_threads(1)

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}},
          "required": ["ok", "n"], "additionalProperties": False}


def _engine(async_scheduling: bool, **options) -> LLMEngine:
    # the CPU this file is written for (its exact-equality checks); on a GPU, gpu.py checks the CUDA path's parity
    options = {"device": "cpu", "dtype": "float32", "max_num_seqs": 8, "block_size": 4, "enable_jump_forward": False, **options}
    return LLMEngine(tiny_model_dir("llama"), async_scheduling=async_scheduling, **options)


def _mixed_params() -> list[SamplingParams]:
    return [
        SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True),
        SamplingParams(temperature=0.8, top_p=0.9, seed=4, max_tokens=9, ignore_eos=True),
        SamplingParams(temperature=1.0, top_k=10, seed=5, max_tokens=15, logprobs=3),
        SamplingParams(temperature=0.7, seed=6, max_tokens=10, n=2, repetition_penalty=1.3, min_tokens=4),
        SamplingParams(temperature=0.0, max_tokens=1),
        SamplingParams(temperature=0.9, seed=7, max_tokens=20, stop=["e", "a"], ignore_eos=True),
        SamplingParams(temperature=0.0, max_tokens=8, frequency_penalty=0.5, logprobs=0),
    ]


def _run(engine: LLMEngine, requests: list[tuple[str, list[int], SamplingParams]],
         abort_after: dict[str, int] | None = None) -> dict[str, tuple]:
    """Every request's final (token ids, text, finish reason, cumulative logprob, logprobs) per sequence."""
    for request_id, prompt, params in requests:
        engine.add_request(request_id, prompt, params)
    finals, steps = {}, 0
    while engine.has_unfinished_requests():
        steps += 1
        for request_id, at in (abort_after or {}).items():
            if steps == at:
                out = engine.abort_request(request_id)
                if out is not None:
                    finals[request_id] = _summary(out)
        for out in engine.step():
            if out.finished:
                finals[out.request_id] = _summary(out)
    return finals


def _summary(out) -> tuple:
    """Per sequence: (token ids, text, finish reason, cumulative logprob, per-token top logprobs as (id, rank,
    logprob))."""
    return tuple((c.token_ids, c.text, c.finish_reason, c.cumulative_logprob,
                  None if c.logprobs is None else
                  [sorted((t, lp.rank, lp.logprob) for t, lp in d.items()) for d in c.logprobs])
                 for c in out.outputs)


def _assert_same(got: dict[str, tuple], want: dict[str, tuple]) -> None:
    """Equal outputs; logprobs within 1e-4: a step's batch differs between the modes (async admits a waiting
    request one step later and runs a finishing sequence one step longer), which moves CPU logits by ~1e-6."""
    assert got.keys() == want.keys()
    for request_id, seqs in want.items():
        assert len(got[request_id]) == len(seqs)
        for (tokens, text, reason, cum, logprobs), (g_tokens, g_text, g_reason, g_cum, g_logprobs) in zip(
                seqs, got[request_id]):
            assert (g_tokens, g_text, g_reason) == (tokens, text, reason), request_id
            assert (g_cum is None) == (cum is None) and (cum is None or g_cum == pytest.approx(cum, abs=1e-4))
            assert (g_logprobs is None) == (logprobs is None)
            for g_row, row in zip(g_logprobs or [], logprobs or []):
                assert [t[:2] for t in g_row] == [t[:2] for t in row]
                assert [t[2] for t in g_row] == pytest.approx([t[2] for t in row], abs=1e-4)


def _requests(prompts: int = 7) -> list[tuple[str, list[int], SamplingParams]]:
    kinds = _mixed_params()
    return [(f"r{i}", [5 + i, 6, 7, 8 + 2 * i, 9] + [11] * (i % 3) * 7, kinds[i % len(kinds)])
            for i in range(prompts)]


def test_outputs_equal_the_synchronous_engine():
    requests = _requests(9)
    sync = _run(_engine(False), requests)
    engine = _engine(True)
    assert engine.async_scheduling
    _assert_same(_run(engine, requests), sync)
    assert engine.block_manager.num_used_blocks == 0


def test_equal_under_preemption_chunked_prefill_and_prefix_caching():
    shared = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    requests = [(f"p{i}", shared + [20 + i] * (5 + 3 * i), SamplingParams(temperature=0.6, seed=i, max_tokens=14))
                for i in range(6)]
    options = {"num_gpu_blocks": 24, "max_num_batched_tokens": 16, "max_num_seqs": 4}
    sync_engine, async_engine = _engine(False, **options), _engine(True, **options)
    sync = _run(sync_engine, requests)
    _assert_same(_run(async_engine, requests), sync)
    assert async_engine.metrics.num_preemptions > 0  # the small pool did preempt
    assert async_engine.block_manager.num_used_blocks == 0


def test_equal_with_replayed_decode_graphs(monkeypatch):
    requests = _requests(5)
    sync = _run(_engine(False), requests)
    monkeypatch.setattr(model_runner, "DecodeGraphs", EagerGraphs)
    engine = _engine(True)
    engine.runner.capture_cuda_graphs(8)
    _assert_same(_run(engine, requests), sync)
    assert engine.runner.graphs.num_replays > 10  # decode steps ran on the captured inputs, fed on the device


def test_constrained_outputs_equal_and_valid():
    import json

    params = [SamplingParams(temperature=0.9, seed=s, max_tokens=60,
                             structured_outputs={"json": SCHEMA}) for s in range(4)]
    requests = [(f"c{i}", [5, 6, 7 + i], p) for i, p in enumerate(params)]
    requests.append(("free", [9, 9, 9], SamplingParams(temperature=0.8, seed=3, max_tokens=20)))
    sync_engine, async_engine = _engine(False), _engine(True)
    sync = _run(sync_engine, requests)
    _assert_same(_run(async_engine, requests), sync)
    # the rows async scheduling runs for sequences that just finished are not masked
    assert async_engine.structured_output.stats.num_mask_rows == sync_engine.structured_output.stats.num_mask_rows
    finished = [sync[f"c{i}"][0] for i in range(4) if sync[f"c{i}"][0][2] == "stop"]
    assert finished, "no constrained output finished within max_tokens"
    for _, text, _, _, _ in finished:
        document = json.loads(text)
        assert set(document) == {"ok", "n"}


def test_abort_drops_the_placeholder_and_frees_blocks():
    requests = [(f"a{i}", [5, 6, 7 + i], SamplingParams(temperature=0.0, max_tokens=30, ignore_eos=True))
                for i in range(3)]
    engine = _engine(True)
    finals = _run(engine, requests, abort_after={"a1": 4})
    tokens, _, reason, _, _ = finals["a1"][0]
    assert reason == "abort"
    assert PENDING_TOKEN not in tokens and 0 < len(tokens) < 30
    assert [len(finals[f"a{i}"][0][0]) for i in (0, 2)] == [30, 30]
    assert engine.block_manager.num_used_blocks == 0
    sync_tokens = _run(_engine(False), requests[:1])["a0"][0][0]
    assert finals["a0"][0][0] == sync_tokens  # the others went on unchanged


def test_a_sequence_at_its_length_limit_is_not_scheduled_again():
    """max_tokens=3 takes 3 forwards (prefill + 2 decodes) in both modes: the placeholder of the third token
    is final, so no fourth row is run for it."""
    rows = {}
    for mode in (False, True):
        engine = _engine(mode)
        forward = engine.runner.forward
        counted = []

        def counting(batch, forward=forward, counted=counted):
            counted.append(int(batch.seq_lens.shape[0]))
            return forward(batch)

        engine.runner.forward = counting
        out = _run(engine, [("x", [5, 6, 7], SamplingParams(temperature=0.0, max_tokens=3, ignore_eos=True))])
        assert len(out["x"][0][0]) == 3
        rows[mode] = counted
    assert rows[True] == rows[False] == [1, 1, 1]


def test_eos_finish_costs_one_dropped_row():
    """A sequence that ends on EOS is known to end only when its token is read, one step later: the async
    engine runs one extra row for it and drops its token."""
    engine = _engine(True)
    eos = engine.eos_token_ids[0]
    engine.add_request("e", [5, 6, 7], SamplingParams(temperature=0.0, max_tokens=50,
                                                       logit_bias={eos: 100.0}, min_tokens=2))
    finals = {}
    while engine.has_unfinished_requests():
        for out in engine.step():
            if out.finished:
                finals[out.request_id] = out
    completion = finals["e"].outputs[0]
    assert completion.finish_reason == "stop" and len(completion.token_ids) == 3
    assert completion.token_ids[-1] == eos and PENDING_TOKEN not in completion.token_ids


def test_config_switches():
    assert EngineConfig(device="cpu").use_async_scheduling is False
    assert EngineConfig(device="cpu", async_scheduling=True).use_async_scheduling is True
    assert EngineConfig(device="cpu", async_scheduling=True).use_jump_forward is False
    assert EngineConfig(device="cpu").use_jump_forward is True
    with pytest.raises(ConfigError, match="jump-forward"):
        EngineConfig(device="cpu", async_scheduling=True, enable_jump_forward=True)
    with pytest.raises(ConfigError, match="tensor_parallel_size"):
        EngineConfig(device="cpu", async_scheduling=True, tensor_parallel_size=2)
    with pytest.raises(ConfigError, match="bool"):
        EngineConfig(device="cpu", async_scheduling="yes")


def test_serve_flag_reaches_the_engine_options():
    from formwork.cli import build_parser
    from formwork.server.serve_cmd import engine_options

    parser = build_parser()
    assert engine_options(parser.parse_args(["serve"]))["async_scheduling"] is None
    assert engine_options(parser.parse_args(["serve", "--async-scheduling"]))["async_scheduling"] is True
    assert engine_options(parser.parse_args(["serve", "--no-async-scheduling"]))["async_scheduling"] is False


@st.composite
def _request_mixes(draw) -> tuple[dict, list[tuple[str, list[int], SamplingParams]]]:
    """Engine limits (small pools preempt, small budgets chunk prefills) and 1-6 requests of any sampling."""
    options = {"num_gpu_blocks": draw(st.sampled_from([10, 64])),
               "max_num_batched_tokens": draw(st.sampled_from([8, 64])),
               "max_num_seqs": draw(st.sampled_from([2, 8]))}
    requests = []
    for i in range(draw(st.integers(1, 6))):
        prompt = draw(st.lists(st.integers(3, 300), min_size=1, max_size=20))
        temperature = draw(st.sampled_from([0.0, 0.7, 1.0]))
        params = SamplingParams(
            temperature=temperature, top_k=draw(st.sampled_from([0, 5])), top_p=draw(st.sampled_from([1.0, 0.8])),
            seed=draw(st.integers(0, 99)), max_tokens=draw(st.integers(1, 12)), n=draw(st.sampled_from([1, 1, 2])),
            ignore_eos=draw(st.booleans()), stop_token_ids=draw(st.sampled_from([None, [7], [40, 41]])),
            stop=draw(st.sampled_from([None, ["e"], ["th", "a "]])), logprobs=draw(st.sampled_from([None, 0, 2])),
            min_tokens=draw(st.sampled_from([0, 2])), presence_penalty=draw(st.sampled_from([0.0, 0.5])))
        requests.append((f"h{i}", prompt, params))
    return options, requests


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_request_mixes())
def test_property_async_outputs_equal_sync(mix):
    options, requests = mix
    sync_engine, async_engine = _engine(False, **options), _engine(True, **options)
    sync = _run(sync_engine, requests)
    _assert_same(_run(async_engine, requests), sync)
    assert async_engine.block_manager.num_used_blocks == 0
