"""Host-to-device copies of the step that must not block the host: `core.bitmask_upload` (the packed
bitmask reaches the sampling device unchanged; on CUDA from pinned memory through a side stream into one
reused device buffer), `core.host_to_device.tensor_on` and the packed sampling parameters. The CUDA cases
run where CUDA is present (the GPU machine runs this file)."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.core import SamplingParams
from formwork.core.bitmask_upload import BitmaskUpload
from formwork.core.host_to_device import tensor_on
from formwork.core.sequence import Request
from formwork.core.sampler import Sampler
from formwork.core.structured_output import StructuredOutputManager
from formwork.kernels import SamplingTensors

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 9), words=st.integers(1, 40), seed=st.integers(0, 2**31), device=st.sampled_from(DEVICES))
def test_uploaded_bitmask_equals_the_host_one(rows, words, seed, device):
    gen = torch.Generator().manual_seed(seed)
    host = torch.randint(-2**31, 2**31 - 1, (rows, words), dtype=torch.int32, generator=gen)
    if device == "cuda":
        host = host.pin_memory()
    upload = BitmaskUpload()
    on_device = upload(host, torch.device(device))
    assert on_device.device.type == device
    assert torch.equal(on_device.cpu(), host)


def test_cuda_upload_reuses_one_buffer_and_orders_after_the_copy():
    if "cuda" not in DEVICES:  # the CPU path: a plain copy, nothing kept
        upload = BitmaskUpload()
        host = torch.arange(12, dtype=torch.int32).view(3, 4)
        assert torch.equal(upload(host, torch.device("cpu")), host)
        assert upload._device_rows is None
        return
    upload = BitmaskUpload()
    first = upload(torch.ones(8, 5, dtype=torch.int32).pin_memory(), torch.device("cuda"))
    second_host = torch.full((6, 5), 7, dtype=torch.int32).pin_memory()
    second = upload(second_host, torch.device("cuda"))
    assert second.data_ptr() == first.data_ptr()  # the same device rows, fewer of them
    assert second.sum().item() == 7 * 30  # read on the current stream right after the call


def test_manager_pins_its_bitmask_only_when_asked():
    manager = StructuredOutputManager(None, 100, [0], max_num_seqs=2, pin_bitmask=False)
    assert manager.bitmask_buffer().shape == (2, 4) and not manager.bitmask_buffer().is_pinned()
    if "cuda" in DEVICES:
        pinned = StructuredOutputManager(None, 100, [0], max_num_seqs=2, pin_bitmask=True)
        assert pinned.bitmask_buffer().is_pinned()


def test_sampler_masks_with_the_uploaded_bitmask():
    device = DEVICES[-1]
    logits = torch.zeros(2, 64, device=device)
    logits[:, 5] = 10.0  # the favourite, forbidden in row 0 by the mask
    bitmask = torch.full((2, 2), -1, dtype=torch.int32)
    bitmask[0, 0] = ~(1 << 5)
    if device == "cuda":
        bitmask = bitmask.pin_memory()

    seqs = [Request(str(i), None, [1, 2], SamplingParams(temperature=0), arrival_time=0.0).seqs[0] for i in range(2)]
    out = Sampler(64, [0])(logits, seqs, bitmask, [0])
    assert out.token_ids[1] == 5 and out.token_ids[0] != 5


@settings(max_examples=20, deadline=None)
@given(values=st.lists(st.integers(-2**40, 2**40), max_size=70), device=st.sampled_from(DEVICES))
def test_tensor_on_keeps_the_values(values, device):
    on_device = tensor_on(values, torch.int64, torch.device(device))
    assert on_device.device.type == device and on_device.dtype == torch.int64
    assert on_device.cpu().tolist() == values


def test_packed_sampling_parameters_reach_the_device():
    device = torch.device(DEVICES[-1])
    params = SamplingTensors.from_lists([0.5, 0.0, 1.5], [0, 5, 40], [1.0, 0.9, 0.25], [0.0, 0.1, 0.0],
                                        [7, 8, 2**62], [0, 3, 2**33], device=device)
    assert params.temperature.device.type == device.type
    assert params.top_k.cpu().tolist() == [0, 5, 40] and params.top_p.cpu().tolist() == [1.0, 0.8999999761581421, 0.25]
    assert params.seeds.cpu().tolist() == [7, 8, 2**62] and params.steps.cpu().tolist() == [0, 3, 2**33]


def test_reused_batch_rows_copy_only_the_steps_off_the_cpu():
    """Off the CPU a batch's parameters are checked and copied once; later steps copy only the steps
    (through a pinned buffer on CUDA). `meta` stands in for a GPU here: the same code path, no values."""
    from formwork.core.sampler import BatchRows

    seqs = [Request(str(i), None, [1, 2, 3], SamplingParams(temperature=0.8, seed=i), arrival_time=0.0).seqs[0]
            for i in range(3)]
    device = torch.device("cuda" if "cuda" in DEVICES else "meta")
    rows = BatchRows(tuple(seq.seq_id for seq in seqs), seqs)
    first = rows.tensors(seqs, device)
    for step in range(1, 4):
        for seq in seqs:
            seq.append_token(5, 0.0)
        again = rows.tensors(seqs, device)
        assert again is first and again.steps.device.type == device.type
        assert rows._steps_host.tolist() == [step] * 3
        if device.type == "cuda":
            assert again.steps.cpu().tolist() == [step] * 3 and rows._steps_host.is_pinned()


def test_sampler_over_steps_equals_a_fresh_sampler_on_the_device():
    """One sampler reusing its batch's parameter tensors across steps draws what a fresh one draws."""
    device = DEVICES[-1]
    params = [SamplingParams(temperature=0.9, top_p=0.8, seed=1), SamplingParams(temperature=0),
              SamplingParams(temperature=1.0, top_k=4, seed=2), SamplingParams(temperature=0.7, min_p=0.05, seed=3)]
    seqs = [Request(str(i), None, [1, 2, 3], p, arrival_time=0.0).seqs[0] for i, p in enumerate(params)]
    logits = torch.randn(4, 96, generator=torch.Generator().manual_seed(0)).to(device) * 3
    sampler = Sampler(96, [0])
    for _ in range(4):
        out = sampler(logits.clone(), seqs)
        assert out.token_ids == Sampler(96, [0])(logits.clone(), seqs).token_ids
        for seq, token in zip(seqs, out.token_ids):
            seq.append_token(token, 0.0)


def test_is_on_reads_a_device_without_index_as_the_current_one():
    from formwork.core.host_to_device import is_on

    assert is_on(torch.zeros(1), torch.device("cpu")) and not is_on(torch.zeros(1), torch.device("meta"))
    if "cuda" in DEVICES:
        on_gpu = torch.zeros(1, device="cuda")
        assert is_on(on_gpu, torch.device("cuda")) and is_on(on_gpu, on_gpu.device)
        assert not is_on(on_gpu, torch.device("cpu"))


def test_started_copies_read_each_step_in_turn_through_two_pinned_sets():
    """`SampledBatch.start_copy` copies into the sampler's two pinned sets in turn; each step's result is its
    own tokens and logprobs (on the CPU there is nothing to copy: the tensors are read as they are)."""
    device = DEVICES[-1]
    params = [SamplingParams(temperature=0.0, logprobs=0), SamplingParams(temperature=0.8, seed=5, logprobs=0)]
    seqs = [Request(str(i), None, [1, 2], p, arrival_time=0.0).seqs[0] for i, p in enumerate(params)]
    sampler = Sampler(64, [0])
    readable = []
    for step in range(4):
        logits = torch.randn(2, 64, generator=torch.Generator().manual_seed(step)).to(device)
        batch = sampler.launch(logits.clone(), seqs)
        batch.start_copy()
        out = batch.result()
        assert out.token_ids == Sampler(64, [0])(logits.clone(), seqs).token_ids
        assert out.token_ids[0] == int(logits[0].argmax())
        readable.append(batch._readable[0])
        for seq, token in zip(seqs, out.token_ids):
            seq.append_token(token, 0.0)
    if device == "cuda":
        ptrs = [t.data_ptr() for t in readable]
        assert all(t.is_pinned() for t in readable)
        assert ptrs[0] == ptrs[2] and ptrs[1] == ptrs[3] and ptrs[0] != ptrs[1]
    else:
        assert all(t.device.type == "cpu" for t in readable)
