"""`subset_builder.byte_classes`: the byte classes of a cut mask (the class of b is the number of
cuts in 1..b), kept per mask and shared by the automata that cut the bytes alike."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from formwork.grammar import subset_builder
from formwork.grammar.automaton import compile_dfa
from formwork.grammar.ir import ByteSet, Bytes, Repeat, Seq
from formwork.grammar.subset_builder import byte_classes


def reference(cut_mask: int) -> list[int]:
    cuts = cut_mask.to_bytes(257, "little")
    return [sum(cuts[1: b + 1]) for b in range(256)]


@given(st.sets(st.integers(1, 255)))
def test_classes_count_the_cuts_up_to_each_byte(cuts):
    mask = 1 | 1 << 8 * 256 | sum(1 << 8 * c for c in cuts)
    classes, count = byte_classes(mask)
    assert classes.tolist() == reference(mask)
    assert count == len(cuts) + 1


def test_automata_cutting_the_bytes_alike_share_one_array():
    subset_builder._classes_kept.clear()
    a = compile_dfa(Seq((Bytes(b"a"), Repeat(ByteSet(((48, 57),)), 0, None))))
    b = compile_dfa(Seq((Bytes(b"a"), Repeat(ByteSet(((48, 57),)), 1, None))))
    c = compile_dfa(Bytes(b"b"))
    assert a.byte_classes()[0] is b.byte_classes()[0]
    assert c.byte_classes()[0] is not a.byte_classes()[0]
    assert a.accepts(b"a12") and b.accepts(b"a1") and not b.accepts(b"a") and c.accepts(b"b")


def test_the_table_is_bounded(monkeypatch):
    monkeypatch.setattr(subset_builder, "_MAX_CLASSES_KEPT", 3)
    subset_builder._classes_kept.clear()
    for k in range(1, 8):
        byte_classes(1 | 1 << 8 * 256 | 1 << 8 * k)
        assert len(subset_builder._classes_kept) <= 3
