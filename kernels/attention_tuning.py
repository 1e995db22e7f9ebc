"""Tunable launch parameters of the Triton paged-attention kernel, their environment override, and the
flash-decoding split heuristic (plain Python: no triton import).

`FORMWORK_ATTENTION_LAUNCH` overrides any field of the defaults without a code change, e.g.

    FORMWORK_ATTENTION_LAUNCH="kv_tile=64,num_warps=4,num_stages=3,split_target_programs=1024,max_splits=32"

(comma-separated `field=integer`; fields as in `AttentionTuning`). A bad name or value raises
`KernelInputError` naming it. The variable is parsed once per distinct value, so a sweep may set it
between calls; `benchmarks/attention_sweep.py` passes `AttentionTuning` objects directly instead.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass

from formwork.kernels.errors import KernelInputError

ENV = "FORMWORK_ATTENTION_LAUNCH"
KV_TILES = (16, 32, 64, 128, 256)   # KV positions per loop iteration: powers of two >= 16 (tl.dot)
SHARED_MEMORY_BUDGET = 128 * 1024   # bytes of pipelined K/V tiles one program may hold (of ~227 KB on Hopper)


@dataclass(frozen=True)
class AttentionTuning:
    """How the kernel walks the KV cache. Decode batches (one new token per sequence) use the first
    three fields, batches with any prefill the `prefill_*` ones; a tile may span several pages or part
    of one (the block table is read per KV position). Splits apply to decode batches only. Defaults:
    the best of `benchmarks/attention_sweep.py` on an H200 (benchmarks/results/attention_sweep.md)."""

    kv_tile: int = 64                   # decode: KV positions per loop iteration
    num_warps: int = 4
    num_stages: int = 2                 # software-pipelined K/V loads in flight (1 = none)
    prefill_kv_tile: int = 32
    prefill_num_warps: int = 4
    prefill_num_stages: int = 2
    split_target_programs: int = 1024   # split decode KV until the grid has this many programs ...
    max_splits: int = 64                # ... with at most this many splits (a power of two) ...
    split_min_tokens: int = 128         # ... each at least this many KV positions long

    def __post_init__(self) -> None:
        for name in ("kv_tile", "prefill_kv_tile"):
            if getattr(self, name) not in KV_TILES:
                raise KernelInputError(f"attention launch: {name}={getattr(self, name)}; expected one of {KV_TILES}")
        for name in ("num_warps", "prefill_num_warps", "max_splits"):
            value = getattr(self, name)
            if value < 1 or value & (value - 1):
                raise KernelInputError(f"attention launch: {name}={value}; expected a power of two")
        for name in ("num_stages", "prefill_num_stages", "split_target_programs", "split_min_tokens"):
            if getattr(self, name) < 1:
                raise KernelInputError(f"attention launch: {name}={getattr(self, name)}; expected >= 1")

    def phase(self, decode_only: bool) -> tuple[int, int, int]:
        """(kv_tile, num_warps, num_stages) of a decode-only or a prefill/mixed batch."""
        if decode_only:
            return self.kv_tile, self.num_warps, self.num_stages
        return self.prefill_kv_tile, self.prefill_num_warps, self.prefill_num_stages


def parse_tuning(text: str, base: AttentionTuning) -> AttentionTuning:
    """`base` with the `field=integer` pairs of `text` (comma-separated) replacing its fields."""
    fields = {field.name for field in dataclasses.fields(AttentionTuning)}
    changes: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = (piece.strip() for piece in item.partition("="))
        if not sep or name not in fields:
            raise KernelInputError(f"{ENV}: {item!r} is not field=integer with a field among {sorted(fields)}")
        try:
            changes[name] = int(value)
        except ValueError:
            raise KernelInputError(f"{ENV}: {name}={value!r} is not an integer") from None
    return dataclasses.replace(base, **changes)


@functools.lru_cache(maxsize=8)
def _tuning_from_env(text: str) -> AttentionTuning:
    return parse_tuning(text, AttentionTuning())


def current_tuning() -> AttentionTuning:
    """The defaults with `FORMWORK_ATTENTION_LAUNCH` applied."""
    return _tuning_from_env(os.environ.get(ENV, ""))


def default_splits(tuning: AttentionTuning, decode_only: bool, num_programs: int, max_context: int) -> int:
    """Flash-decoding split count of a decode batch whose un-split grid has `num_programs` programs: the
    fewest (a power of two) that bring the grid to `split_target_programs`, at most `max_splits`, and no
    more than the longest possible context (block table width * block size, known without a sync) has
    `split_min_tokens`-long slices. Batches with prefill never split."""
    if not decode_only:
        return 1
    splits = 1
    while (num_programs * splits < tuning.split_target_programs and splits * 2 <= tuning.max_splits
           and splits * 2 * tuning.split_min_tokens <= max_context):
        splits *= 2
    return splits


def fit_shared_memory(kv_tile: int, num_stages: int, tile_bytes_per_position: int) -> tuple[int, int]:
    """(kv_tile, num_stages) shrunk, stages first, until the pipelined K and V tiles fit the budget."""
    while num_stages > 1 and num_stages * kv_tile * tile_bytes_per_position > SHARED_MEMORY_BUDGET:
        num_stages -= 1
    while kv_tile > KV_TILES[0] and num_stages * kv_tile * tile_bytes_per_position > SHARED_MEMORY_BUDGET:
        kv_tile //= 2
    return kv_tile, num_stages
