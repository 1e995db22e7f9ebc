"""The subset construction's set-up from a document NFA, against plain Python: byte classes from
every edge (the regions' DFAs and templates included) and the regions as `_subset.c` reads them."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import formwork.grammar.automaton as automaton
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg.automaton import compile_cfg
from formwork.grammar.ir import Grammar
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.lexemes import Region
from formwork.grammar.nfa import NFA, accepting_bytes, byte_ranges
from formwork.grammar.subset_builder import SubsetBuilder

SCHEMAS = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"


def edge_bounds(edges: list) -> set[int]:
    """Where the edges of `edges` (a list of edge tuples per state, or None) start and end."""
    return {b for state in edges if state is not None for lo, hi, _ in state for b in (lo, hi + 1)}


def reference_classes(nfa: NFA) -> np.ndarray:
    """class_of_byte: bytes between consecutive cuts share a class."""
    cuts = {0, 256} | edge_bounds(nfa.edges)
    for region in nfa.regions:
        cuts |= edge_bounds(byte_ranges(region.dfa) if region.dfa is not None else region.template.edges)
    bounds = sorted(cuts)
    return np.repeat(np.arange(len(bounds) - 1, dtype=np.int32), np.diff(bounds))


def reference_spec(region: Region) -> tuple:
    """(first, last, end, start, kind, flags, a, b) from a `Region`."""
    flags = (region.start_moves is not None) | 2 * region.open_ended
    if getattr(region.dfa, "counted_dfa", False):  # a CountedDFA (a bounded string length: maxLength, hostname)
        return (region.first, region.last, region.end, region.start, 3, flags, byte_ranges(region.dfa),
                region.dfa.spec())
    if region.dfa is not None:
        return (region.first, region.last, region.end, region.start, 0, flags, byte_ranges(region.dfa),
                accepting_bytes(region.dfa))
    if region.counted:
        return (region.first, region.last, region.end, region.start, 2, flags, region.template.moves,
                (region.node.min, region.node.max))
    return (region.first, region.last, region.end, region.start, 1, flags, region.template.moves, None)


@pytest.fixture(scope="module")
def documents() -> list[NFA]:
    """The document NFAs of the 139 benchmark schemas (and of their CFG terminals)."""
    built: list[NFA] = []
    patch = pytest.MonkeyPatch()

    def recorded(*args, **kwargs) -> NFA:
        nfa = NFA(*args, **kwargs)
        if kwargs.get("template_of") is not None:
            built.append(nfa)
        return nfa

    patch.setattr(automaton, "NFA", recorded)
    try:
        builder = AutomatonBuilder()
        for path in sorted(SCHEMAS.glob("*.json")):
            node = lower_json_schema(json.loads(path.read_text())["schema"]).node
            if isinstance(node, Grammar):
                compile_cfg(node, CompileBudget(), builder)
            else:
                builder.dfa(node, keep=False)
    finally:
        patch.undo()
    assert len(built) > 139 and sum(len(nfa.regions) for nfa in built) > 500
    return built


def test_byte_classes_are_the_cuts_of_every_edge(documents: list[NFA]) -> None:
    for nfa in documents:
        builder = SubsetBuilder(nfa, 0, 1, CompileBudget())
        want = reference_classes(nfa)
        assert builder.class_of_byte.dtype == np.int32 and builder.class_of_byte.tolist() == want.tolist()
        assert builder.num_classes == int(want[-1]) + 1


def test_region_specs_are_the_regions(documents: list[NFA]) -> None:
    for nfa in documents:
        assert nfa.region_specs() == [reference_spec(r) for r in nfa.regions]
