"""Lowering a schema leaves no reference cycles behind.

The collector is paused while a schema compiles and resumes once after; whatever the lowering
leaves in cycles (a recursive closure, an object holding a callback that holds it) stays alive
until that young collection and makes it longer.  Without cycles every object of the lowering
dies by reference counting as soon as it returns.  These tests lower the benchmark schemas (and
a few shapes they lack) with the collector's "save all" flag, so any cycle shows as garbage.
"""
from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from formwork.grammar.json_schema import lower_json_schema

SCHEMAS = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"

EXTRA_SHAPES: list[Any] = [
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": {"type": "boolean"},
     "minItems": 1, "maxItems": 5},
    {"type": "array", "prefixItems": [{"type": "integer"}] * 3, "maxItems": 2},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
     "minProperties": 1, "maxProperties": 2},
    {"type": "string", "pattern": "^(ab|c[\"\\\\])+$", "maxLength": 9},
    {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date"}]},
]


@contextmanager
def _cycles_found() -> Iterator[list[Any]]:
    """The objects the block left in reference cycles (collected with `gc.DEBUG_SAVEALL`)."""
    found: list[Any] = []
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield found
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was_enabled:
            gc.enable()


def _kinds(objects: list[Any]) -> list[str]:
    return sorted({getattr(o, "__qualname__", type(o).__qualname__) if callable(o) else type(o).__qualname__
                   for o in objects})


def _assert_acyclic(make: Callable[[], Any]) -> None:
    make()  # process-wide caches (leaves, lexemes, regexes) are filled first: they are kept on purpose
    with _cycles_found() as found:
        make()
    assert not found, f"lowering left reference cycles of: {_kinds(found)}"


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json"))[::7], ids=lambda p: p.stem)
def test_benchmark_schema_lowering_leaves_no_cycles(path: Path) -> None:
    schema = json.loads(path.read_text())["schema"]
    _assert_acyclic(lambda: lower_json_schema(schema))


@pytest.mark.parametrize("schema", EXTRA_SHAPES, ids=range(len(EXTRA_SHAPES)))
def test_array_object_and_pattern_lowering_leaves_no_cycles(schema: Any) -> None:
    _assert_acyclic(lambda: lower_json_schema(schema))


def test_a_cycle_would_be_found() -> None:
    """The check itself: a recursive closure made in the block is reported."""
    def make() -> None:
        def again(n: int) -> int:
            return n and again(n - 1)
        again(2)

    with pytest.raises(AssertionError, match="again"):
        _assert_acyclic(make)
