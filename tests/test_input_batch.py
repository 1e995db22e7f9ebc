"""The persistent `InputBatch` against a rebuild from the sequences (`forward_batch.host_arrays`).

A real scheduler and block manager (prefix caching on, a small pool so sequences get preempted) run random
operations: requests join (some sharing a prompt prefix), steps run with random sampled tokens, sequences
finish or are aborted; after every schedule the batch's arrays, and what `pack_step` writes into the input
buffers, must equal the ones built from scratch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.core.block_manager import BlockManager
from formwork.core.forward_batch import ForwardBatchError, host_arrays
from formwork.core.input_batch import InputBatch
from formwork.core.input_buffers import InputBuffers
from formwork.core.sampling_params import SamplingParams
from formwork.core.scheduler import Scheduler
from formwork.core.sequence import Request, SequenceStatus

BLOCK_SIZE = 4
WIDTH = 12  # blocks a table may hold (48 tokens)


def _rebuilt(scheduled, pad_to):
    items = [(item.seq.token_ids[item.seq.num_computed_tokens:item.seq.num_computed_tokens + item.num_new_tokens],
              item.seq.num_computed_tokens, item.seq.block_table) for item in scheduled]
    return host_arrays(items, BLOCK_SIZE, [item.wants_logits for item in scheduled], table_width=WIDTH,
                       pad_to=pad_to)


operation = st.one_of(
    st.tuples(st.just("add"), st.integers(1, 3), st.integers(1, 14), st.booleans()),  # n, prompt length, shared
    st.tuples(st.just("step"), st.lists(st.integers(3, 50), min_size=8, max_size=8)),  # sampled tokens
    st.tuples(st.just("finish"), st.integers(0, 63)),
    st.tuples(st.just("abort_request"), st.integers(0, 63)),
)


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(operation, min_size=1, max_size=60), num_blocks=st.integers(6, 24),
       budget=st.integers(4, 40), pad=st.booleans())
def test_the_batch_arrays_equal_a_rebuild(ops, num_blocks, budget, pad):
    manager = BlockManager(num_blocks, BLOCK_SIZE, enable_prefix_caching=True)
    scheduler = Scheduler(manager, max_num_seqs=8, max_num_batched_tokens=budget)
    batch = InputBatch(8, WIDTH, BLOCK_SIZE)
    buffers = InputBuffers(max_tokens=64, max_seqs=8, max_blocks_per_seq=WIDTH, block_size=BLOCK_SIZE,
                           device=torch.device("cpu"))
    manager.on_table_change = batch.on_blocks_changed
    shared = [7, 8, 9, 10, 11, 12, 13, 14, 15]
    requests: list[Request] = []
    bucket = (lambda num_seqs: 8) if pad else None
    for op in ops:
        if op[0] == "add":
            _, n, length, share = op
            prompt = (shared if share else []) + [20 + (len(requests) + i) % 30 for i in range(length)]
            request = Request(str(len(requests)), None, prompt, SamplingParams(n=n, max_tokens=None),
                              arrival_time=float(len(requests)))
            requests.append(request)
            for seq in request.seqs:
                scheduler.add(seq)
        elif op[0] == "step":
            sched = scheduler.schedule()
            if sched.is_empty:
                continue
            arrays, padded_to = batch.step_arrays(sched.scheduled, bucket)
            decode = all(item.num_new_tokens == 1 for item in sched.scheduled)
            assert padded_to == (8 if pad and decode else None)
            expected = _rebuilt(sched.scheduled, padded_to)
            assert arrays.keys() == expected.keys()
            for name, values in expected.items():
                np.testing.assert_array_equal(arrays[name], values, err_msg=name)
            packed = batch.pack_step(sched.scheduled, buffers, bucket)  # decode steps: written in place
            assert packed.decode_bucket == padded_to
            for name, values in expected.items():
                np.testing.assert_array_equal(getattr(packed, name).numpy(), values, err_msg=f"packed {name}")
            sampled = {item.seq.seq_id: (op[1][i % 8], 0.0) for i, item in enumerate(sched.scheduled)
                       if item.wants_logits}
            for seq in scheduler.update_from_output(sched, sampled):
                if seq.num_tokens >= WIDTH * BLOCK_SIZE:  # as the engine's max_model_len does
                    scheduler.finish(seq, SequenceStatus.FINISHED_LENGTH)
        else:
            live = [seq for request in requests for seq in request.seqs if not seq.status.is_finished]
            if not live:
                continue
            seq = live[op[1] % len(live)]
            targets = seq.request.seqs if op[0] == "abort_request" else [seq]
            for target in targets:
                scheduler.finish(target, SequenceStatus.FINISHED_ABORTED)
        # every sequence holding blocks has its row; every freed one gave its row back
        holders = {seq for request in requests for seq in request.seqs if seq.block_table}
        assert set(batch.rows) <= holders
        for seq, row in batch.rows.items():
            assert batch.num_blocks[row] == len(seq.block_table)
            np.testing.assert_array_equal(batch.tables[row, :len(seq.block_table)], seq.block_table)
            assert not batch.tables[row, len(seq.block_table):].any()


def test_a_table_wider_than_the_buffers_is_refused():
    manager = BlockManager(32, BLOCK_SIZE, enable_prefix_caching=False)
    scheduler = Scheduler(manager, max_num_seqs=4, max_num_batched_tokens=64)
    batch = InputBatch(4, 2, BLOCK_SIZE)
    manager.on_table_change = batch.on_blocks_changed
    request = Request("r", None, list(range(3, 12)), SamplingParams(max_tokens=None), arrival_time=0.0)
    scheduler.add(request.seqs[0])
    with pytest.raises(ForwardBatchError, match="exceeds the buffer width 2"):
        batch.step_arrays(scheduler.schedule().scheduled)


def test_more_sequences_than_rows_are_refused():
    manager = BlockManager(32, BLOCK_SIZE, enable_prefix_caching=False)
    scheduler = Scheduler(manager, max_num_seqs=4, max_num_batched_tokens=64)
    batch = InputBatch(2, 8, BLOCK_SIZE)
    manager.on_table_change = batch.on_blocks_changed
    request = Request("r", None, [3, 4, 5], SamplingParams(n=3, max_tokens=None), arrival_time=0.0)
    for seq in request.seqs:
        scheduler.add(seq)
    with pytest.raises(ForwardBatchError, match="more than 2 sequences"):
        batch.step_arrays(scheduler.schedule().scheduled)


def test_packed_padding_rows_are_rewritten_after_a_larger_batch():
    """Padded decode rows hold zeros (slots -1) in the staging buffer, not what an earlier batch left there."""
    manager = BlockManager(40, BLOCK_SIZE, enable_prefix_caching=True)
    scheduler = Scheduler(manager, max_num_seqs=8, max_num_batched_tokens=64)
    batch = InputBatch(8, WIDTH, BLOCK_SIZE)
    manager.on_table_change = batch.on_blocks_changed
    buffers = InputBuffers(max_tokens=64, max_seqs=8, max_blocks_per_seq=WIDTH, block_size=BLOCK_SIZE,
                           device=torch.device("cpu"))
    buffers.host.fill_(7)  # stands for whatever an earlier step left in the buffer
    requests = [Request(str(i), None, [20 + i, 21, 22, 23, 24, 25], SamplingParams(max_tokens=None),
                        arrival_time=float(i)) for i in range(5)]
    for request in requests:
        scheduler.add(request.seqs[0])
    sizes = []
    for step in range(4):
        sched = scheduler.schedule()
        packed = batch.pack_step(sched.scheduled, buffers, lambda num_seqs: 8)
        expected = _rebuilt(sched.scheduled, packed.decode_bucket)
        for name, values in expected.items():
            np.testing.assert_array_equal(getattr(packed, name).numpy(), values, err_msg=f"step {step} {name}")
        sizes.append((len(sched.scheduled), packed.decode_bucket))
        scheduler.update_from_output(sched, {item.seq.seq_id: (30, 0.0) for item in sched.scheduled})
        if step == 1:
            for request in requests[2:]:
                scheduler.finish(request.seqs[0], SequenceStatus.FINISHED_ABORTED)
    assert sizes == [(5, None), (5, 8), (2, 8), (2, 8)]
