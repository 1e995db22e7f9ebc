"""InputBatch: the running sequences' block tables kept in one numpy array between steps.

A step's batch used to flatten every scheduled sequence's block table (a Python list) into a fresh array.
Here each sequence that runs holds a row of `tables` while it has KV blocks: the row is written when the
sequence first runs and when the block manager appends a block to it (`on_blocks_changed`), and given
back when its blocks are freed (finish, abort, preemption). A step gathers the rows of its scheduled
sequences with one numpy take; only the new token ids and computed counts are read from the sequences.
`step_arrays` returns what `forward_batch.host_arrays` returns for the same sequences; `pack_step` writes a
decode step's fields straight into the input buffers' staging buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from formwork.core.forward_batch import ForwardBatchError, assemble

if TYPE_CHECKING:
    from formwork.core.forward_batch import ForwardBatch
    from formwork.core.input_buffers import InputBuffers
    from formwork.core.scheduler import ScheduledSequence
    from formwork.core.sequence import Sequence


class InputBatch:
    """Block-table rows of up to `max_seqs` sequences, `width` blocks each."""

    def __init__(self, max_seqs: int, width: int, block_size: int):
        self.width, self.block_size = width, block_size
        self.tables = np.zeros((max_seqs, width), dtype=np.int32)
        self.num_blocks = np.zeros(max_seqs, dtype=np.int64)  # valid entries of each row
        self._free_rows = list(range(max_seqs - 1, -1, -1))
        self.rows: dict[Sequence, int] = {}
        self._last_seqs: list[Sequence] = []  # the previous step's sequences and their rows
        self._last_rows = np.zeros(0, dtype=np.int64)
        self._arange: dict[int, np.ndarray] = {}

    def on_blocks_changed(self, seq: Sequence) -> None:
        """The block manager changed `seq`'s block table: keep its row in step (freed: give the row back)."""
        row = self.rows.get(seq)
        if row is None:
            return
        table = seq.block_table
        old = int(self.num_blocks[row])
        if not table:
            self.tables[row, :old] = 0
            self.num_blocks[row] = 0
            del self.rows[seq]
            self._free_rows.append(row)
            self._last_seqs = []
            return
        if len(table) > self.width:
            raise ForwardBatchError(f"a block table of {len(table)} blocks exceeds the buffer width {self.width}")
        if len(table) < old:  # never done by the block manager; rewrite rather than trust the prefix
            self.tables[row, len(table):old] = 0
        self.tables[row, :len(table)] = table
        self.num_blocks[row] = len(table)

    def _join(self, seq: Sequence) -> int:
        """Give `seq` a row holding its current block table."""
        if not self._free_rows:
            raise ForwardBatchError(f"more than {len(self.tables)} sequences in the input batch")
        row = self._free_rows.pop()
        self.rows[seq] = row
        self.num_blocks[row] = 0
        self.on_blocks_changed(seq)
        return row

    def _rows_of(self, seqs: list[Sequence]) -> np.ndarray:
        """The rows of `seqs`, in order (newcomers join); reused while the scheduled sequences stay the same."""
        if seqs == self._last_seqs:  # identity comparison: sequences define no __eq__
            return self._last_rows
        rows = self.rows
        join = self._join
        found = [rows.get(seq) for seq in seqs]
        for i, row in enumerate(found):
            if row is None:
                found[i] = join(seqs[i])
        self._last_seqs = seqs
        self._last_rows = np.array(found, dtype=np.int64)
        return self._last_rows

    def step_arrays(self, scheduled: list[ScheduledSequence], decode_bucket: Callable[[int], int | None] | None = None,
                    ) -> tuple[dict[str, np.ndarray], int | None]:
        """The step's fields for `scheduled` (see `forward_batch.host_arrays`), and the rows a decode batch
        is padded to: `decode_bucket(num_seqs)` (None: no padding) when every sequence runs one token."""
        plan = self._plan(scheduled, decode_bucket)
        if isinstance(plan, dict):
            return plan, None
        num_rows, num_logits = plan.num_rows, plan.num_logits
        out = {name: np.empty(shape, dtype=dtype) for name, (shape, dtype) in
               self._decode_shapes(num_rows, num_logits).items()}
        self._write_decode(plan, out)
        return out, plan.pad_to

    def pack_step(self, scheduled: list[ScheduledSequence], buffers: InputBuffers,
                  decode_bucket: Callable[[int], int | None] | None = None) -> ForwardBatch:
        """`buffers.pack_arrays(*step_arrays(...))`, a decode step's fields written straight into the staging
        buffer (no intermediate arrays)."""
        plan = self._plan(scheduled, decode_bucket)
        if isinstance(plan, dict):
            return buffers.pack_arrays(plan)
        views, batch, size = buffers.staging(plan.num_rows, plan.num_rows, plan.num_logits, plan.pad_to)
        self._write_decode(plan, views)
        buffers.send(size)
        return batch

    def _plan(self, scheduled: list[ScheduledSequence], decode_bucket: Callable[[int], int | None] | None,
              ) -> _DecodePlan | dict[str, np.ndarray]:
        """A decode step's plan, or the fields of any other step (raises on a batch the buffers cannot hold)."""
        if not scheduled:
            raise ForwardBatchError("a forward batch needs at least one sequence")
        seqs = [item.seq for item in scheduled]
        rows = self._rows_of(seqs)
        query_lens = [item.num_new_tokens for item in scheduled]
        num_tokens = sum(query_lens)
        computed = np.fromiter([seq.num_computed_tokens for seq in seqs], dtype=np.int64, count=len(seqs))
        logits_for = np.fromiter([item.wants_logits for item in scheduled], dtype=bool, count=len(seqs))
        if num_tokens == len(seqs) and min(query_lens) == 1:
            pad_to = decode_bucket(len(seqs)) if decode_bucket is not None else None
            num_seqs, bs = len(seqs), self.block_size
            num_rows = num_seqs if pad_to is None else pad_to
            table_lens = self.num_blocks[rows]
            if computed.min() < 0 or (computed >= table_lens * bs).any() or num_rows < num_seqs:
                return assemble(np.zeros(num_seqs, dtype=np.int64), computed, np.ones(num_seqs, dtype=np.int64),
                                self.tables[rows], table_lens, bs, logits_for, pad_to)  # raises its error
            all_logits = bool(logits_for.all())
            return _DecodePlan(seqs, rows, computed, None if all_logits else logits_for, pad_to, num_rows,
                               num_seqs if all_logits else int(logits_for.sum()))
        news = [item.seq.token_ids[item.seq.num_computed_tokens:item.seq.num_computed_tokens + item.num_new_tokens]
                for item in scheduled]
        input_ids = np.fromiter(chain.from_iterable(news), dtype=np.int64, count=num_tokens)
        return assemble(input_ids, computed, np.array(query_lens, dtype=np.int64), self.tables[rows],
                        self.num_blocks[rows], self.block_size, logits_for)

    def _decode_shapes(self, num_rows: int, num_logits: int) -> dict[str, tuple[tuple[int, ...], type]]:
        """Shape and dtype of each field of a decode batch of `num_rows` rows."""
        return {"input_ids": ((num_rows,), np.int64), "positions": ((num_rows,), np.int64),
                "slot_mapping": ((num_rows,), np.int64), "seq_lens": ((num_rows,), np.int64),
                "query_start_loc": ((num_rows + 1,), np.int64), "block_tables": ((num_rows, self.width), np.int32),
                "logits_indices": ((num_logits,), np.int64)}

    def _write_decode(self, plan: _DecodePlan, out: dict[str, np.ndarray]) -> None:
        """Write `assemble`'s fields for one new token per sequence into `out` (every element): the offsets,
        positions and context lengths follow from the computed counts, padding rows are zero (slots -1)."""
        seqs, rows, computed = plan.seqs, plan.rows, plan.computed
        num_seqs, bs = len(seqs), self.block_size
        steps = self._steps(plan.num_rows)
        input_ids, positions, slot_mapping = out["input_ids"], out["positions"], out["slot_mapping"]
        input_ids[:num_seqs] = [seq.token_ids[seq.num_computed_tokens] for seq in seqs]
        input_ids[num_seqs:] = 0
        positions[:num_seqs] = computed
        positions[num_seqs:] = 0
        np.add(positions, 1, out=out["seq_lens"])
        out["query_start_loc"][...] = steps
        tables = out["block_tables"]
        np.take(self.tables, rows, axis=0, out=tables[:num_seqs])
        tables[num_seqs:] = 0
        blocks = self.tables[rows, computed // bs]
        np.multiply(blocks, bs, out=slot_mapping[:num_seqs], dtype=np.int64)
        slot_mapping[:num_seqs] += computed % bs
        slot_mapping[num_seqs:] = -1
        out["logits_indices"][...] = steps[:num_seqs] if plan.logits_for is None else steps[:num_seqs][plan.logits_for]

    def _steps(self, num_rows: int) -> np.ndarray:
        """0, 1, ..., num_rows (a decode batch's query offsets), cached; never written."""
        steps = self._arange.get(num_rows)
        if steps is None:
            steps = self._arange[num_rows] = np.arange(num_rows + 1, dtype=np.int64)
            steps.flags.writeable = False
        return steps


class _DecodePlan(NamedTuple):
    """What a decode step's fields are written from (`logits_for` None: every row wants logits)."""

    seqs: list[Sequence]
    rows: np.ndarray
    computed: np.ndarray
    logits_for: np.ndarray | None
    pad_to: int | None
    num_rows: int
    num_logits: int
