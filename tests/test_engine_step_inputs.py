"""Step inputs: one host-to-device copy per step through persistent buffers, decode padding to CUDA-graph
sizes, and the graph replay logic (run on the CPU with a stand-in that replays the captured step
eagerly on the captured, fixed-address inputs, the way a CUDA graph does)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import model_runner  # noqa: E402
from formwork.core.cuda_graphs import DecodeGraphs  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.forward_batch import ForwardBatch, ForwardBatchError, host_arrays  # noqa: E402
from formwork.core.input_buffers import InputBuffers  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

torch.set_num_threads(1)


class TransferCounter:
    """Counts calls that can move data between host and device: `Tensor.to` with a device, `copy_`, and
    `torch.tensor`/`as_tensor` with a device; the CPU-only reference kernels (replaced by Triton on CUDA)
    are left out."""

    def __init__(self):
        self.calls: list[str] = []
        self._saved = {}

    def _note(self, what: str) -> None:
        caller = sys._getframe(2).f_code.co_filename
        if "kernels/reference" not in caller:
            self.calls.append(f"{what} ({caller.rsplit('/', 2)[-2]}/{caller.rsplit('/', 1)[-1]})")

    def __enter__(self) -> "TransferCounter":
        counter = self
        to, copy_, tensor, as_tensor = torch.Tensor.to, torch.Tensor.copy_, torch.tensor, torch.as_tensor
        self._saved = {"to": to, "copy_": copy_, "tensor": tensor, "as_tensor": as_tensor}

        def counted_to(self, *args, **kwargs):
            if "device" in kwargs or any(isinstance(a, (str, torch.device, torch.Tensor)) for a in args):
                counter._note("to")
            return to(self, *args, **kwargs)

        def counted_copy(self, *args, **kwargs):
            counter._note("copy_")
            return copy_(self, *args, **kwargs)

        def counted_factory(factory, name):
            def make(*args, **kwargs):
                if kwargs.get("device") is not None:
                    counter._note(name)
                return factory(*args, **kwargs)
            return make

        torch.Tensor.to, torch.Tensor.copy_ = counted_to, counted_copy
        torch.tensor, torch.as_tensor = counted_factory(tensor, "tensor"), counted_factory(as_tensor, "as_tensor")
        return self

    def __exit__(self, *exc) -> None:
        torch.Tensor.to, torch.Tensor.copy_ = self._saved["to"], self._saved["copy_"]
        torch.tensor, torch.as_tensor = self._saved["tensor"], self._saved["as_tensor"]


def _decoding_engine(**options) -> LLMEngine:
    engine = LLMEngine(tiny_model_dir("llama"), dtype="float32", max_num_seqs=8, **options)
    for i in range(4):
        engine.add_request(str(i), [5, 6, 7, 8 + i], SamplingParams(temperature=0.7, seed=i, max_tokens=30,
                                                                    ignore_eos=True))
    engine.step()  # the prefill; every later step is a decode step
    return engine


def test_a_decode_step_copies_its_inputs_once():
    engine = _decoding_engine()
    buffers = engine.runner.buffers
    copies = buffers.num_copies
    with TransferCounter() as counter:
        engine.step()
    assert buffers.num_copies == copies + 1
    # on the CPU the staging buffer is the device buffer: no copy at all (sampling parameters are one `.to`
    # on CUDA, none on the CPU)
    assert counter.calls == [] and buffers.device_buffer is buffers.host
    # elsewhere (here the meta device, which allocates nothing) the packed batch is one copy
    elsewhere = InputBuffers(max_tokens=16, max_seqs=4, max_blocks_per_seq=4, block_size=16,
                             device=torch.device("meta"))
    with TransferCounter() as counter:
        batch = elsewhere.pack([([5], 4, [0]), ([6], 4, [1])], [True, True])
    assert batch.input_ids.device.type == "meta" and elsewhere.device_buffer is not elsewhere.host
    assert len(counter.calls) == 1 and counter.calls[0].startswith("copy_ (core/input_buffers.py"), counter.calls
    with TransferCounter() as counter:  # the same layout again: the same one copy (of slices made once)
        elsewhere.pack([([7], 4, [0]), ([8], 4, [1])], [True, True])
    assert len(counter.calls) == 1 and counter.calls[0].startswith("copy_ (core/input_buffers.py"), counter.calls
    items = [([5], 4, [0]), ([6], 4, [1])]
    with TransferCounter() as old_way:  # what every step did before: a copy per field
        ForwardBatch.build(items, 16, [True, True])
    assert len(old_way.calls) == 7


def test_batches_are_views_into_one_persistent_buffer():
    engine = _decoding_engine()
    buffers = engine.runner.buffers
    base, end = buffers.device_buffer.data_ptr(), buffers.device_buffer.data_ptr() + buffers.device_buffer.numel()
    batches = [buffers.pack([([5], 4, [0]), ([6], 4, [1])], [True, True]) for _ in range(2)]
    for batch in batches:
        for name in ("input_ids", "positions", "slot_mapping", "block_tables", "seq_lens", "query_start_loc"):
            tensor = getattr(batch, name)
            assert base <= tensor.data_ptr() < end and (tensor.data_ptr() - base) % 256 == 0
            assert tensor.data_ptr() % 16 == 0  # what Triton specialises on
    assert batches[0].input_ids.data_ptr() == batches[1].input_ids.data_ptr()
    assert batches[0].block_tables.shape == (2, buffers.width)
    reference = ForwardBatch.build([([5], 4, [0]), ([6], 4, [1])], buffers.block_size, [True, True])
    assert torch.equal(batches[1].slot_mapping, reference.slot_mapping)
    assert torch.equal(batches[1].block_tables[:, :1], reference.block_tables)
    with pytest.raises(ForwardBatchError, match="exceeds the input buffers"):
        buffers.pack([([1], 0, [0])] * (buffers.max_seqs + 1), [True] * (buffers.max_seqs + 1))


def test_graph_sizes():
    assert DecodeGraphs.buckets_for(64) == [1, 2, 4, 8, 16, 32, 48, 64]
    assert DecodeGraphs.buckets_for(20) == [1, 2, 4, 8, 16, 20]
    assert DecodeGraphs.buckets_for(3) == [1, 2, 3] and DecodeGraphs.buckets_for(1) == [1]
    graphs = DecodeGraphs(DecodeGraphs.buckets_for(20), 8, torch.device("cpu"))
    assert [graphs.bucket_for(n) for n in (1, 3, 5, 9, 17, 20, 21)] == [1, 4, 8, 16, 20, 20, None]


def test_decode_padding_rows_write_nothing_and_attend_to_one_token():
    arrays = host_arrays([([7], 5, [2, 3]), ([9], 0, [4])], 4, [True, True], table_width=3, pad_to=4)
    assert arrays["input_ids"].tolist() == [7, 9, 0, 0] and arrays["slot_mapping"].tolist() == [13, 16, -1, -1]
    assert arrays["seq_lens"].tolist() == [6, 1, 1, 1] and arrays["query_start_loc"].tolist() == [0, 1, 2, 3, 4]
    assert arrays["logits_indices"].tolist() == [0, 1]  # logits of the real rows only
    assert np.array_equal(arrays["block_tables"], [[2, 3, 0], [4, 0, 0], [0, 0, 0], [0, 0, 0]])
    with pytest.raises(ForwardBatchError, match="only a decode batch"):
        host_arrays([([7, 8], 0, [2])], 4, [True], pad_to=2)
    with pytest.raises(ForwardBatchError, match="exceeds the buffer width"):
        host_arrays([([7], 9, [1, 2, 3])], 4, [True], table_width=2)


class EagerGraphs(DecodeGraphs):
    """A CUDA graph stand-in for the CPU: `replay` re-runs the captured step on the batch it was
    captured with, i.e. it sees new inputs only through the fixed addresses, exactly like a graph."""

    def _record(self, size, step):
        self.replays[size] = step
        self.num_replays = 0

    def replay(self, size):
        self.num_replays += 1
        return super().replay(size)


def _generate(engine: LLMEngine, num_requests: int) -> list[list[int]]:
    kinds = [SamplingParams(temperature=0.0, max_tokens=12, ignore_eos=True),
             SamplingParams(temperature=0.8, top_p=0.9, seed=4, max_tokens=9, ignore_eos=True),
             SamplingParams(temperature=1.0, top_k=10, seed=5, max_tokens=15, ignore_eos=True)]
    for i in range(num_requests):
        engine.add_request(str(i), [5 + i, 6, 7, 8 + 2 * i, 9], kinds[i % 3])
    finals = {}
    while engine.has_unfinished_requests():
        for out in engine.step():
            if out.finished:
                finals[out.request_id] = out.outputs[0].token_ids
    return [finals[str(i)] for i in range(num_requests)]


def test_graph_replay_logic_gives_the_eager_tokens(monkeypatch):
    eager = _generate(LLMEngine(tiny_model_dir("llama"), dtype="float32", max_num_seqs=6, block_size=4), 5)
    monkeypatch.setattr(model_runner, "DecodeGraphs", EagerGraphs)
    engine = LLMEngine(tiny_model_dir("llama"), dtype="float32", max_num_seqs=6, block_size=4)
    engine.runner.capture_cuda_graphs(6)
    graphs = engine.runner.graphs
    assert sorted(graphs.replays) == [1, 2, 4, 6]
    padded = []
    prepare_step = engine.runner.prepare_step

    def watch(input_batch, scheduled):
        batch = prepare_step(input_batch, scheduled)
        padded.append((len(scheduled), batch.decode_bucket))
        return batch

    monkeypatch.setattr(engine.runner, "prepare_step", watch)
    assert _generate(engine, 5) == eager
    assert graphs.num_replays == sum(bucket is not None for _, bucket in padded) > 10
    assert (3, 4) in padded and (5, 6) in padded  # decode batches padded to the next graph size
