"""Per-request and engine metrics after real generation, and the snapshot's vLLM names (`formwork:`)."""

import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import LLM, SamplingParams  # noqa: E402
from formwork.core.metrics import Histogram  # noqa: E402


def test_request_and_engine_metrics():
    llm = LLM(tiny_model_dir("llama"), block_size=4, max_num_seqs=2)
    params = SamplingParams(temperature=0, max_tokens=6, ignore_eos=True)
    prompts = ["Hello world", "The cat sat", "Numbers: 1 2 3"]
    outputs = llm.generate(prompts, params, use_tqdm=False)
    for out in outputs:
        m = out.metrics
        assert m.num_prompt_tokens == len(out.prompt_token_ids) and m.num_generation_tokens == 6
        assert 0 <= m.queue_time <= m.time_to_first_token <= m.e2e_latency
        assert len(m.inter_token_latencies) == 5 and m.time_per_output_token > 0
    # max_num_seqs=2: the third request queued behind the first two.
    assert outputs[2].metrics.queue_time >= outputs[0].metrics.queue_time
    snap = llm.engine.metrics_snapshot()
    assert snap["formwork:num_requests_running"] == 0 and snap["formwork:num_requests_waiting"] == 0
    assert snap["formwork:kv_cache_usage_perc"] == 0.0
    assert snap["formwork:prompt_tokens_total"] == sum(len(o.prompt_token_ids) for o in outputs)
    assert snap["formwork:generation_tokens_total"] == 18
    assert snap["formwork:request_success_total"]["length"] == 3
    assert snap["formwork:time_to_first_token_seconds"]["count"] == 3
    assert snap["formwork:inter_token_latency_seconds"]["count"] == 15
    tpot = snap["formwork:time_per_output_token_seconds"]
    assert tpot["count"] == 3 and tpot["sum"] == pytest.approx(sum(o.metrics.time_per_output_token for o in outputs))
    assert snap["formwork:e2e_request_latency_seconds"]["count"] == 3
    # Same prompts again: prefix cache hits show up in tokens.
    llm.generate(prompts, params, use_tqdm=False)
    snap = llm.engine.metrics_snapshot()
    assert 0 < snap["formwork:prefix_cache_hits_total"] < snap["formwork:prefix_cache_queries_total"]


def test_kv_usage_while_running():
    llm = LLM(tiny_model_dir("llama"), block_size=4, num_gpu_blocks=32)
    engine = llm.engine
    engine.add_request("x", "Hello world, how are you", SamplingParams(max_tokens=20, ignore_eos=True))
    engine.step()
    snap = engine.metrics_snapshot()
    used = engine.block_manager.num_used_blocks
    assert used > 0 and snap["formwork:kv_cache_usage_perc"] == pytest.approx(used / 32)
    assert snap["formwork:num_requests_running"] == 1
    engine.abort_request("x")
    assert engine.metrics_snapshot()["formwork:kv_cache_usage_perc"] == 0.0


def test_histogram_is_cumulative():
    h = Histogram((0.1, 1.0))
    for v in (0.05, 0.1, 0.5, 3.0):
        h.observe(v)
    snap = h.snapshot()
    assert snap["buckets"] == [(0.1, 2), (1.0, 3), (float("inf"), 4)]
    assert snap["count"] == 4 and snap["sum"] == pytest.approx(3.65)


def test_histogram_counts_every_observation_of_concurrent_threads():
    h = Histogram((0.5,))
    threads = [threading.Thread(target=lambda: [h.observe(0.25) for _ in range(2000)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert h.snapshot()["buckets"] == [(0.5, 8000), (float("inf"), 8000)]
