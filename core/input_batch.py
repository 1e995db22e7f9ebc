"""InputBatch: the running sequences' block tables kept in one numpy array between steps.

A step's batch used to flatten every scheduled sequence's block table (a Python list) into a fresh array.
Here each sequence that runs holds a row of `tables` while it has KV blocks: the row is written when the
sequence first runs and when the block manager appends a block to it (`on_blocks_changed`), and given
back when its blocks are freed (finish, abort, preemption). A step gathers the rows of its scheduled
sequences with one numpy take; only the new token ids and computed counts are read from the sequences.
`step_arrays` returns what `forward_batch.host_arrays` returns for the same sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from formwork.core.forward_batch import ForwardBatchError, assemble

if TYPE_CHECKING:
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
        if not scheduled:
            raise ForwardBatchError("a forward batch needs at least one sequence")
        seqs = [item.seq for item in scheduled]
        num_seqs = len(seqs)
        rows = self._rows_of(seqs)
        computed = np.fromiter([seq.num_computed_tokens for seq in seqs], dtype=np.int64, count=num_seqs)
        query_lens = np.fromiter([item.num_new_tokens for item in scheduled], dtype=np.int64, count=num_seqs)
        num_tokens = int(query_lens.sum())
        pad_to = None
        if num_tokens == num_seqs and query_lens.min() == 1:  # a decode batch
            input_ids = np.fromiter([seq.token_ids[seq.num_computed_tokens] for seq in seqs], dtype=np.int64,
                                    count=num_seqs)
            pad_to = decode_bucket(num_seqs) if decode_bucket is not None else None
        else:
            news = [item.seq.token_ids[item.seq.num_computed_tokens:item.seq.num_computed_tokens + item.num_new_tokens]
                    for item in scheduled]
            input_ids = np.fromiter(chain.from_iterable(news), dtype=np.int64, count=num_tokens)
        logits_for = np.fromiter([item.wants_logits for item in scheduled], dtype=bool, count=num_seqs)
        return assemble(input_ids, computed, query_lens, self.tables[rows], self.num_blocks[rows], self.block_size,
                        logits_for, pad_to), pad_to
