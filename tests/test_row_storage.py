"""The growable rows of a lazy DFA (`grammar/row_storage.py`): growth keeps every row written, new
rows read as zeros, large rows grow in place, and a view held across a growth stays valid."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.row_storage import MAPPED_FROM_BYTES, RowStorage


def _fill(rows: np.ndarray, start: int, stop: int) -> None:
    for r in range(start, stop):
        rows[r] = np.arange(rows.shape[1], dtype=np.int32) * 7 + r


def _expected(capacity: int, written: int, k: int) -> np.ndarray:
    out = np.zeros((capacity, k), dtype=np.int32)
    _fill(out, 0, written)
    return out


@settings(max_examples=40, deadline=None)
@given(k=st.integers(1, 300), steps=st.lists(st.integers(1, 3000), min_size=1, max_size=6))
def test_growth_keeps_rows_and_zeroes_new_ones(k: int, steps: list[int]) -> None:
    storage = RowStorage(64, k)
    rows = storage.rows()
    written = 0
    for extra in steps:
        _fill(rows, written, storage.capacity)
        written = storage.capacity
        rows = None  # the owner's own view goes first, as `LazyDFA._grow` does
        rows = storage.grow(storage.capacity + extra)
        assert rows.shape == (storage.capacity, k)
        assert rows.flags.writeable
        np.testing.assert_array_equal(rows, _expected(storage.capacity, written, k))


def test_large_rows_move_to_a_mapping_that_grows_in_place() -> None:
    k = 100
    storage = RowStorage(64, k)
    capacity = MAPPED_FROM_BYTES // (4 * k) + 1
    rows = storage.grow(capacity)
    assert storage._map is not None and storage._heap is None
    _fill(rows, 0, capacity)
    mapping = storage._map
    rows = None
    rows = storage.grow(4 * capacity)
    assert storage._map is mapping  # remapped, not copied
    np.testing.assert_array_equal(rows, _expected(4 * capacity, capacity, k))


def test_a_view_held_across_growth_forces_a_copy_and_stays_valid() -> None:
    k = 50
    storage = RowStorage(64, k)
    capacity = MAPPED_FROM_BYTES // (4 * k) + 1
    rows = storage.grow(capacity)
    _fill(rows, 0, capacity)
    held = rows[: capacity // 2]  # a caller still reading the old rows
    mapping = storage._map
    rows = None
    grown = storage.grow(3 * capacity)
    assert storage._map is not mapping
    np.testing.assert_array_equal(grown, _expected(3 * capacity, capacity, k))
    np.testing.assert_array_equal(held, _expected(capacity // 2, capacity // 2, k))
    grown[0, 0] = -1  # the new rows are the copy's: the held view does not see them
    assert held[0, 0] == 0


def test_growing_to_no_more_rows_returns_the_same_rows() -> None:
    storage = RowStorage(64, 3)
    rows = storage.rows()
    rows[5] = 9
    assert storage.grow(10) is rows
    assert storage.capacity == 64
