"""ForwardBatch.build: the flattened layout of a mixed step, its validation, and logits-free steps."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest_model import hf_logits, hf_model, model_files  # noqa: E402

from formwork.core.forward_batch import ForwardBatch, ForwardBatchError  # noqa: E402
from formwork.core.model_runner import ModelRunner  # noqa: E402


def test_forward_batch_layout():
    batch = ForwardBatch.build(
        [([5, 6, 7], 0, [3, 1]), ([8], 5, [0, 2]), ([9, 10], 2, [4])],
        block_size=4, logits_for=[True, True, False])
    assert batch.input_ids.tolist() == [5, 6, 7, 8, 9, 10]
    assert batch.positions.tolist() == [0, 1, 2, 5, 2, 3]
    # seq 1 position 5 -> block_table[1] = 2, offset 1; seq 2 positions 2, 3 -> block 4, offsets 2, 3
    assert batch.slot_mapping.tolist() == [12, 13, 14, 9, 18, 19]
    assert batch.block_tables.tolist() == [[3, 1], [0, 2], [4, 0]]
    assert batch.seq_lens.tolist() == [3, 6, 4]
    assert batch.query_start_loc.tolist() == [0, 3, 4, 6]
    assert batch.logits_indices.tolist() == [2, 3]
    assert batch.block_tables.dtype == torch.int32 and batch.slot_mapping.dtype == torch.int64
    assert batch.seq_lens.dtype == torch.int32 and batch.query_start_loc.dtype == torch.int32
    assert batch.input_ids.dtype == torch.int64 and batch.logits_indices.dtype == torch.int64
    assert (batch.num_tokens, batch.num_seqs) == (6, 3)


@pytest.mark.parametrize("seqs, logits_for, message", [
    ([], [], "at least one sequence"),
    ([([1], 0, [0])], [True, False], "logits_for has 2 entries"),
    ([([], 0, [0])], [True], "no new tokens"),
    ([([1, 2], 3, [0])], [True], "cannot hold 5 tokens"),
    ([([1], -1, [0])], [True], "negative"),
])
def test_forward_batch_rejects_bad_input(seqs, logits_for, message):
    with pytest.raises(ForwardBatchError, match=message):
        ForwardBatch.build(seqs, 4, logits_for)


def test_forward_batch_rejects_bad_block_size():
    with pytest.raises(ForwardBatchError, match="block_size must be positive"):
        ForwardBatch.build([([1], 0, [0])], 0, [True])


def test_step_without_logits_still_fills_the_cache():
    """A mid-prefill chunk returns no logits rows, yet the next chunk sees its K/V."""
    runner = ModelRunner(model_files("llama"), num_blocks=4, block_size=4, dtype="float32")
    ids = list(range(200, 212))
    first = runner.forward(ForwardBatch.build([(ids[:8], 0, [2, 0, 3])], 4, [False]))
    assert first.shape == (0, runner.vocab_size) and first.dtype == torch.float32
    last = runner.forward(ForwardBatch.build([(ids[8:], 8, [2, 0, 3])], 4, [True]))
    torch.testing.assert_close(last[0], hf_logits(hf_model("llama"), ids)[-1],
                               atol=2e-5, rtol=1e-5)
