"""Tensor parallelism over real worker processes (gloo on loopback): TP=2 against TP=1 in float32 at
every sampled step (logits within 1e-5, identical greedy tokens) for single, batched, prefix-cached and
JSON-schema requests, with KV heads split and replicated; each worker holds only its shard.

One TP engine at a time per process (torch.distributed has one default group): each class shares one,
closed when the class is done.
"""

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest_model import variant_dir  # noqa: E402

from formwork.core import LLM, SamplingParams  # noqa: E402
from formwork.core.distributed.runner import TensorParallelError  # noqa: E402

OPTIONS = dict(device="cpu", dtype="float32", block_size=4, num_gpu_blocks=128, max_num_seqs=8)
PROMPTS = ["Hello world", "The quick brown fox jumps over", "{\"name\": \"Alice\",", "Numbers: 0 1 2 3 4 5 6 7"]
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "ok": {"type": "boolean"}},
          "required": ["name", "ok"], "additionalProperties": False}


class Pair:
    """A TP=2 engine and a TP=1 engine on the same model and options, both recording the logits the
    sampler receives for every sequence. Both get the same calls, so their request ids match."""

    def __init__(self, variant: str, **options):
        self.ref = LLM(variant_dir(variant), **OPTIONS, **options)
        self.tp = LLM(variant_dir(variant), **OPTIONS, **options, tensor_parallel_size=2)
        self.logits = {"ref": _record_logits(self.ref), "tp": _record_logits(self.tp)}

    def generate(self, prompts, params: SamplingParams):
        """Outputs of both engines, after checking each sequence's logits agree at every sampled position
        and their tokens match. (Steps may batch differently: grammars compile on a thread.)"""
        for seen in self.logits.values():
            seen.clear()
        ref = self.ref.generate(prompts, params, use_tqdm=False)
        tp = self.tp.generate(prompts, params, use_tqdm=False)
        assert self.logits["tp"].keys() == self.logits["ref"].keys() and self.logits["ref"]
        for seq, rows in self.logits["ref"].items():
            theirs = self.logits["tp"][seq]
            assert len(theirs) == len(rows), seq
            for a, b in zip(rows, theirs):
                assert (a - b).abs().max().item() <= 1e-5, seq
        assert [[c.token_ids for c in o.outputs] for o in tp] == [[c.token_ids for c in o.outputs] for o in ref]
        assert all(o.error is None for o in tp)
        return ref, tp

    def close(self) -> None:
        self.tp.close()


def _record_logits(llm: LLM) -> dict[tuple[str, int], list[torch.Tensor]]:
    """Every logits row the sampler gets, by (request id, sequence index), in order."""
    seen: dict[tuple[str, int], list[torch.Tensor]] = {}
    sampler = llm.engine.sampler

    def recording(logits, seqs, *args):
        for row, seq in zip(logits, seqs):
            seen.setdefault((seq.request_id, seq.index), []).append(row.clone())
        return sampler(logits, seqs, *args)

    llm.engine.sampler = recording
    return seen


GREEDY = SamplingParams(temperature=0, max_tokens=12, ignore_eos=True)


@pytest.fixture(scope="class")
def split_pair():
    pair = Pair("llama", enable_prefix_caching=True)
    yield pair
    pair.close()


@pytest.fixture(scope="class")
def replicated_pair():
    pair = Pair("llama_mqa", enable_prefix_caching=False)
    yield pair
    pair.close()


class TestSplitKVHeadsWithPrefixCaching:
    """Llama, 4 query heads over 2 KV heads: one KV head per rank; untied lm_head."""

    @pytest.fixture
    def pair(self, split_pair):
        return split_pair

    def test_single_request(self, pair):
        pair.generate(PROMPTS[1], SamplingParams(temperature=0, max_tokens=24, ignore_eos=True))

    def test_batched_requests(self, pair):
        params = [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (5, 12, 9, 16)]
        pair.generate(PROMPTS, params)

    def test_prefix_cache_hits(self, pair):
        shared = "The cat sat on the mat and looked at the moon. "
        prompts = [shared + tail for tail in ("Hello", "A small model", "Numbers: 1 2")]
        pair.generate(prompts, GREEDY)
        ref, tp = pair.generate(prompts, GREEDY)
        assert [o.num_cached_tokens for o in tp] == [o.num_cached_tokens for o in ref]
        assert min(o.num_cached_tokens for o in tp) >= 8

    def test_json_schema_request(self, pair):
        params = SamplingParams(temperature=0, max_tokens=40, structured_outputs={"json": SCHEMA})
        _, tp = pair.generate(["Structured generation: ", "{"], params)
        for output in tp:
            text = output.outputs[0].text
            assert text.startswith("{")
            if output.outputs[0].finish_reason == "stop":
                assert set(json.loads(text)) == {"name", "ok"}

    def test_each_worker_holds_only_its_shard(self, pair):
        whole = pair.ref.engine.runner.shard_report()
        reports = pair.tp.engine.runner.shard_reports()
        assert [r["rank"] for r in reports] == [0, 1]
        for report in reports:
            assert report["checkpoint_bytes_read"] < 0.55 * whole["checkpoint_bytes_read"]
            assert report["kv_cache"][4] == whole["kv_cache"][4] // 2  # one of the two KV heads
            assert report["parameters"]["model.layers.0.self_attn.o_proj.weight"] == (64, 32)
            assert report["parameters"]["lm_head.weight"] == (200, 64)
        assert whole["parameters"]["model.layers.0.self_attn.o_proj.weight"] == (64, 64)


class TestReplicatedKVHeadWithoutPrefixCaching:
    """Llama with one KV head (MQA) on two ranks: the head is replicated; tied embeddings."""

    @pytest.fixture
    def pair(self, replicated_pair):
        return replicated_pair

    def test_single_and_batched_requests(self, pair):
        pair.generate(PROMPTS[0], GREEDY)
        pair.generate(PROMPTS, [SamplingParams(temperature=0, max_tokens=n, ignore_eos=True) for n in (3, 10, 7, 12)])

    def test_repeated_prompts_are_recomputed(self, pair):
        ref, tp = pair.generate([PROMPTS[1]] * 3, GREEDY)
        assert [o.num_cached_tokens for o in tp] == [o.num_cached_tokens for o in ref] == [0, 0, 0]

    def test_json_schema_request(self, pair):
        pair.generate(["{"], SamplingParams(temperature=0, max_tokens=40, structured_outputs={"json": SCHEMA}))

    def test_both_ranks_hold_the_kv_head(self, pair):
        reports = pair.tp.engine.runner.shard_reports()
        whole = pair.ref.engine.runner.shard_report()
        assert [r["kv_cache"][4] for r in reports] == [1, 1] == [whole["kv_cache"][4]] * 2
        qkv = [r["parameters"]["model.layers.0.self_attn.qkv_proj.weight"] for r in reports]
        assert qkv == [(32 + 16 + 16, 64)] * 2  # 2 of 4 query heads, the whole KV head

    def test_last_a_worker_whose_parent_is_gone_exits_and_the_engine_reports_it(self, pair):
        """Runs last in its class: it ends the shared engine. Rank 0's end of a worker's socket closes
        (what rank 0's death does): the idle worker exits on its own, the engine turns unhealthy before
        any step, and requests then fail with TensorParallelError instead of hanging."""
        engine = pair.tp.engine
        assert engine.is_healthy
        (worker,) = engine.runner._workers
        worker.conn.close()
        assert worker.process.wait(60) == 0
        assert not engine.is_healthy
        with pytest.raises(TensorParallelError, match=f"worker rank 1 \\(pid {worker.process.pid}\\) exited with status 0"):
            pair.tp.generate(["Hello", "The cat"], GREEDY, use_tqdm=False)
        assert not engine.requests  # the failed batch was aborted, not left queued
        with pytest.raises(TensorParallelError, match="has stopped"):
            pair.tp.generate("Hello", GREEDY, use_tqdm=False)
