"""What a document's automaton keeps for its life and never changes is out of the cyclic collector's
lists (the young collection that ends each compile would scan it again and again): the NFA's region
records and their list, the region specs the subset core keeps and their list, the list of state
sets; all still freed by reference counting."""
from __future__ import annotations

import gc
import weakref

import pytest

from formwork.grammar import nfa as nfa_module
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.ir import And, Bytes, ByteSet, Repeat, Seq

DIGITS = ByteSet(((48, 57),))


def _document():
    """A document with two embedded DFAs (regions) between literals."""
    number = And(Repeat(DIGITS, 1, None), Repeat(DIGITS, 0, 3))
    return Seq((Bytes(b"a"), number, Bytes(b"-"), number, Bytes(b"b")))


def test_region_records_specs_and_sets_are_untracked(monkeypatch: pytest.MonkeyPatch) -> None:
    specs = []
    region_specs = nfa_module.NFA.region_specs
    monkeypatch.setattr(nfa_module.NFA, "region_specs", lambda self: specs.append(region_specs(self)) or specs[-1])
    dfa = AutomatonBuilder().dfa(_document())
    nfa = dfa.nfa
    assert len(nfa.region_tuples) == 2 and len(specs[-1]) == 2
    assert not gc.is_tracked(nfa.region_tuples) and not any(map(gc.is_tracked, nfa.region_tuples))
    assert not gc.is_tracked(specs[-1]) and not any(map(gc.is_tracked, specs[-1]))
    assert dfa.accepts(b"a12-3b") and not dfa.accepts(b"a1234-3b")
    sets = dfa._b.sets
    assert len(sets) > 2 and not gc.is_tracked(sets) and not any(map(gc.is_tracked, sets))


def test_an_automaton_is_freed_without_a_collection() -> None:
    gc.disable()
    try:
        builder = AutomatonBuilder()
        dfa = builder.dfa(_document(), keep=False)  # a whole document: the builder keeps its pieces only
        assert dfa.accepts(b"a1-2b")
        nfa, region = weakref.ref(dfa.nfa), dfa.nfa.region_tuples[0]
        assert region[5] is builder.eager(region[6] or _document().items[1])  # the piece the builder keeps
        del dfa
        assert nfa() is None  # the document's NFA, its records and specs went with it
        del builder, region
    finally:
        gc.enable()
