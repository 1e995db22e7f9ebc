"""SamplingTensors.from_arrays (the engine's path): the same tensors as from_lists, and the same checks."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from formwork.kernels import SamplingTensors
from formwork.kernels.errors import KernelInputError

FIELDS = ("temperature", "top_k", "top_p", "min_p", "seeds", "steps")

rows = st.lists(st.tuples(st.floats(0.0, 5.0), st.integers(0, 1000), st.floats(1e-6, 1.0), st.floats(0.0, 1.0),
                          st.integers(0, 2**63 - 1), st.integers(0, 10**6)), min_size=1, max_size=8)


@given(rows)
def test_from_arrays_equals_from_lists(values):
    columns = [list(column) for column in zip(*values)]
    lists = SamplingTensors.from_lists(*columns)
    arrays = SamplingTensors.from_arrays(
        np.array(columns[0], dtype=np.float64), np.array(columns[1], dtype=np.int64),
        np.array(columns[2], dtype=np.float64), np.array(columns[3], dtype=np.float64),
        np.array(columns[4], dtype=np.int64), np.array(columns[5], dtype=np.int64))
    for name in FIELDS:
        a, b = getattr(lists, name), getattr(arrays, name)
        assert a.dtype == b.dtype and torch.equal(a, b), name


def one_row(**changes):
    values = dict(temperature=[1.0], top_k=[0], top_p=[1.0], min_p=[0.0], seeds=[1], steps=[0])
    values.update(changes)
    dtypes = dict(temperature=np.float64, top_k=np.int64, top_p=np.float64, min_p=np.float64, seeds=np.int64,
                  steps=np.int64)
    return {name: np.array(values[name], dtype=dtypes[name]) for name in FIELDS}


@pytest.mark.parametrize("changes, message", [
    (dict(temperature=[1.0, float("nan")], top_k=[0, 0], top_p=[1.0, 1.0], min_p=[0.0, 0.0], seeds=[1, 1],
          steps=[0, 0]), r"temperature\[1\]=nan"),
    (dict(temperature=[float("inf")]), r"temperature\[0\]"),
    (dict(top_p=[1.0000001]), r"top_p\[0\]"),  # rejected before float32 would round it to 1.0
    (dict(top_p=[0.0]), r"top_p\[0\]"),
    (dict(min_p=[-0.5]), r"min_p\[0\]"),
    (dict(steps=[-1]), r"steps\[0\]"),
])
def test_from_arrays_names_the_bad_row(changes, message):
    with pytest.raises(KernelInputError, match=message):
        SamplingTensors.from_arrays(**one_row(**changes))


def test_from_arrays_rejects_arrays_of_different_lengths():
    with pytest.raises(KernelInputError, match="differ in length"):
        SamplingTensors.from_arrays(**one_row(top_k=[0, 1]))


@given(rows)
def test_packed_buffer_holds_the_same_values(values):
    """The one-copy layout used off the CPU (checked here on the CPU): aligned views, same values."""
    columns = [list(column) for column in zip(*values)]
    dtypes = (np.float64, np.int64, np.float64, np.float64, np.int64, np.int64)
    arrays = {name: np.array(column, dtype=dtype) for name, column, dtype in zip(FIELDS, columns, dtypes)}
    packed = SamplingTensors._packed(arrays, torch.device("cpu"))
    plain = SamplingTensors.from_arrays(**arrays)
    for name in FIELDS:
        a, b = getattr(packed, name), getattr(plain, name)
        assert a.dtype == b.dtype and torch.equal(a, b), name
        assert a.data_ptr() % 16 == 0
