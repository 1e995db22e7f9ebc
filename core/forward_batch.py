"""ForwardBatch: the flattened inputs and paged-attention metadata of one model step."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch
from torch import Tensor


class ForwardBatchError(ValueError):
    """The scheduled sequences cannot form a valid batch (empty step, short block table, ...)."""


@dataclass
class ForwardBatch:
    """All tensors live on the runner's device.

    input_ids       int64 [T]    new tokens of all scheduled sequences, concatenated
    positions       int64 [T]    position of each new token in its sequence
    slot_mapping    int64 [T]    where each new token's K/V goes in the paged pool (block * block_size + offset)
    block_tables    int32 [S, max_blocks]  (unused entries 0)
    seq_lens        int32 [S]    context length including this step's tokens
    query_start_loc int32 [S+1]  offsets of each sequence's new tokens in ``input_ids``
    logits_indices  int64 [L]    rows whose next-token logits are wanted
    """

    input_ids: Tensor
    positions: Tensor
    slot_mapping: Tensor
    block_tables: Tensor
    seq_lens: Tensor
    query_start_loc: Tensor
    logits_indices: Tensor
    decode_bucket: int | None = None  # set when packed for the CUDA graph of this many rows

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def num_seqs(self) -> int:
        return int(self.seq_lens.shape[0])

    @classmethod
    def build(cls, seqs: list[tuple[list[int], int, list[int]]], block_size: int, logits_for: list[bool],
              device: torch.device | str = "cpu") -> "ForwardBatch":
        """Flatten ``seqs`` = [(new_token_ids, num_computed_tokens, block_table), ...] into one batch.

        ``logits_for[s]`` says whether sequence ``s`` wants the logits of its last new token (False in the
        middle of a chunked prefill).
        """
        arrays = host_arrays(seqs, block_size, logits_for)

        def to(name: str) -> Tensor:
            return torch.from_numpy(arrays[name]).to(device=device, dtype=FIELD_DTYPES[name])

        return cls(**{name: to(name) for name in FIELD_DTYPES})


# Field dtypes, in the order `InputBuffers` packs them (the fields a CUDA graph reads come first).
FIELD_DTYPES: dict[str, torch.dtype] = {
    "input_ids": torch.int64,
    "positions": torch.int64,
    "slot_mapping": torch.int64,
    "seq_lens": torch.int32,
    "query_start_loc": torch.int32,
    "block_tables": torch.int32,
    "logits_indices": torch.int64,
}


def host_arrays(seqs: list[tuple[list[int], int, list[int]]], block_size: int, logits_for: list[bool],
                table_width: int | None = None, pad_to: int | None = None) -> dict[str, np.ndarray]:
    """The batch's fields as numpy arrays (see `ForwardBatch`), block tables ``table_width`` wide (default:
    the longest table). ``pad_to`` appends one-token padding rows up to that many sequences (a decode batch
    for a CUDA graph of that size): token 0 at position 0, slot -1 (no KV write), context 1, table row 0."""
    if not seqs:
        raise ForwardBatchError("a forward batch needs at least one sequence")
    if len(logits_for) != len(seqs):
        raise ForwardBatchError(f"logits_for has {len(logits_for)} entries for {len(seqs)} sequences")
    if block_size <= 0:
        raise ForwardBatchError(f"block_size must be positive, got {block_size}")
    news, computed_list, table_list = zip(*seqs)
    query_lens = np.fromiter(map(len, news), dtype=np.int64, count=len(seqs))
    table_lens = np.fromiter(map(len, table_list), dtype=np.int64, count=len(seqs))
    width = int(table_lens.max()) if table_width is None else table_width
    if int(table_lens.max()) > width:
        raise ForwardBatchError(f"a block table of {int(table_lens.max())} blocks exceeds the buffer width {width}")
    tables = np.zeros((len(seqs), width), dtype=np.int32)
    filled = np.arange(width) < table_lens[:, None]
    tables[filled] = np.fromiter(chain.from_iterable(table_list), dtype=np.int32, count=int(table_lens.sum()))
    input_ids = np.fromiter(chain.from_iterable(news), dtype=np.int64, count=int(query_lens.sum()))
    return assemble(input_ids, np.array(computed_list, dtype=np.int64), query_lens, tables, table_lens, block_size,
                    np.asarray(logits_for, dtype=bool), pad_to)


def assemble(input_ids: np.ndarray, computed: np.ndarray, query_lens: np.ndarray, tables: np.ndarray,
             table_lens: np.ndarray, block_size: int, logits_for: np.ndarray,
             pad_to: int | None = None) -> dict[str, np.ndarray]:
    """The batch's fields from per-sequence arrays: the new tokens concatenated, each sequence's computed
    count, number of new tokens, block table row (zeros past its `table_lens` blocks) and whether it wants
    logits; padded as `host_arrays` says. Checks what `host_arrays` checks."""
    num_seqs = len(query_lens)
    seq_lens = computed + query_lens
    _check_rows(query_lens, computed, table_lens, seq_lens, block_size)
    num_rows = num_seqs
    if pad_to is not None:
        if pad_to < num_rows or int(query_lens.max()) != 1:
            raise ForwardBatchError(f"only a decode batch of at most {pad_to} sequences pads to {pad_to} rows, "
                                    f"got {num_seqs} sequences of up to {int(query_lens.max())} new tokens")
        num_rows = pad_to
    if num_rows > num_seqs:
        tables = np.concatenate([tables, np.zeros((num_rows - num_seqs, tables.shape[1]), np.int32)])
    query_start_loc = np.zeros(num_seqs + 1, dtype=np.int64)
    np.cumsum(query_lens, out=query_start_loc[1:])
    if len(input_ids) == num_seqs:  # one new token per sequence (a decode batch)
        positions = computed
        slot_mapping = tables[np.arange(num_seqs), positions // block_size].astype(np.int64) * block_size
        slot_mapping += positions % block_size
    else:
        seq_index = np.repeat(np.arange(num_seqs), query_lens)
        positions = np.arange(len(input_ids), dtype=np.int64) - query_start_loc[seq_index] + computed[seq_index]
        slot_mapping = (tables[seq_index, positions // block_size].astype(np.int64) * block_size
                        + positions % block_size)
    logits_indices = query_start_loc[1:][logits_for] - 1
    pad = num_rows - num_seqs
    if pad:
        input_ids = np.concatenate([input_ids, np.zeros(pad, np.int64)])
        positions = np.concatenate([positions, np.zeros(pad, np.int64)])
        slot_mapping = np.concatenate([slot_mapping, np.full(pad, -1, np.int64)])
        seq_lens = np.concatenate([seq_lens, np.ones(pad, np.int64)])
        query_start_loc = np.concatenate([query_start_loc, query_start_loc[-1] + np.arange(1, pad + 1)])
    return dict(input_ids=input_ids, positions=positions, slot_mapping=slot_mapping, seq_lens=seq_lens,
                query_start_loc=query_start_loc, block_tables=tables, logits_indices=logits_indices)


def _check_rows(query_lens: np.ndarray, computed: np.ndarray, table_lens: np.ndarray, seq_lens: np.ndarray,
                block_size: int) -> None:
    """Every sequence has new tokens, a non-negative computed count and a block table that holds it."""
    if (query_lens < 1).any():
        raise ForwardBatchError(f"sequence {int(np.argmax(query_lens < 1))} has no new tokens")
    if (computed < 0).any():
        s = int(np.argmax(computed < 0))
        raise ForwardBatchError(f"sequence {s} has negative num_computed_tokens {int(computed[s])}")
    short = table_lens * block_size < seq_lens
    if short.any():
        s = int(np.argmax(short))
        raise ForwardBatchError(f"sequence {s}: block table of {int(table_lens[s])} blocks x {block_size} cannot "
                                f"hold {int(seq_lens[s])} tokens")
