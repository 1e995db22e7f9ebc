"""The CPU sampler's bitmask application (`_mask_rows_cpu`): its sparse path (few words forbid
anything, as in free text between tagged regions) and its dense path equal a plain reference."""
from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings, strategies as st

from formwork.core.sampler import _mask_rows_cpu


def _reference(logits: torch.Tensor, bitmask: torch.Tensor, rows: list[int]) -> torch.Tensor:
    out = logits.clone()
    for row in rows:
        for token in range(out.shape[1]):
            word = int(bitmask[row, token // 32]) & 0xFFFFFFFF
            if not word >> (token % 32) & 1:
                out[row, token] = float("-inf")
    return out


@settings(max_examples=40, deadline=None)
@given(vocab=st.integers(1, 700), num_rows=st.integers(1, 5), seed=st.integers(0, 2**31),
       forbid=st.sampled_from([0.0, 0.0005, 0.01, 0.3, 1.0]), data=st.data())
def test_masking_equals_the_reference(vocab, num_rows, seed, forbid, data):
    rng = np.random.default_rng(seed)
    words = (vocab + 31) // 32
    allowed = rng.random((num_rows, words * 32)) >= forbid  # padding bits past the vocabulary vary too
    bitmask = torch.from_numpy(np.packbits(allowed, axis=1, bitorder="little").view(np.int32).copy())
    rows = sorted(data.draw(st.sets(st.integers(0, num_rows - 1), min_size=1)))
    logits = torch.from_numpy(rng.standard_normal((num_rows, vocab)).astype(np.float32))
    expected = _reference(logits, bitmask, rows)
    _mask_rows_cpu(logits, bitmask, rows)
    assert torch.equal(logits, expected)
