"""The C copy of plain JSON (`schemas/native/_plain_copy.c`) gives what the checking copy gives,
and declines (None) everything the checking copy must decide."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas._plain_copy import plain_copy
from formwork.schemas.errors import SchemaError
from formwork.schemas.source import _checking_copy

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=2), inner, max_size=3)
                      | st.tuples(inner), max_leaves=12)


def _containers(value, found):
    if isinstance(value, (dict, list)):
        found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            _containers(item, found)
    return found


def _plain(value) -> bool:
    """Only exact dicts with str keys, lists and plain scalars (finite floats)."""
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if type(value) is list:
        return all(map(_plain, value))
    return type(value) in (str, int, bool, type(None)) or type(value) is float and math.isfinite(value)


@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=3) | st.dictionaries(st.text(max_size=2), values, max_size=3),
       st.integers(1, 4))
def test_plain_copy_is_the_checking_copy_or_declines(value, max_depth):
    got = plain_copy(value, max_depth)
    try:
        expected = _checking_copy(value, max_depth)
    except SchemaError:
        assert got is None
        return
    if not _plain(value):
        assert got is None
        return
    assert got == expected
    copies, originals = _containers(got[0], []), _containers(value, [])
    assert not {id(c) for c in copies} & {id(o) for o in originals}  # every container is new


def test_scalars_and_non_containers_are_declined():
    for value in (True, 1, "x", None, (1,), {1: 2}):
        assert plain_copy(value, 8) is None


def test_a_nesting_too_deep_for_the_c_stack_is_declined():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert plain_copy(deep, 200_000) is None
    assert plain_copy([[["x"]]], 3) == ([[["x"]]], 3)


@pytest.mark.parametrize("value", [{"a": float("nan")}, {"a": float("-inf")}, {"a": {"b": object()}},
                                   {"a": [1, (2,)]}, {"a": 1.5, "b": [True, None, -3, "s"]}])
def test_non_finite_and_foreign_values(value):
    got = plain_copy(value, 8)
    assert (got is None) != _plain(value)
