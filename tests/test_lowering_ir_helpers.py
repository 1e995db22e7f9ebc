"""The IR helpers' fast node construction gives the nodes the dataclass constructors give."""
from __future__ import annotations

from formwork.grammar.ir import EMPTY, Alt, Bytes, Seq, alt, lit, optional, seq


def test_helper_nodes_equal_constructed_ones():
    a, b = lit("ab"), optional(lit("c"))
    made = [lit("ab"), seq(a, b), seq(a, b, lit("d"), a), alt(a, b), seq(b, lit("x"), lit("y"), b)]
    expected = [Bytes(b"ab"), Seq((a, b)), Seq((a, b, Bytes(b"dab"))), Alt((a, b)),
                Seq((b, Bytes(b"xy"), b))]
    assert made == expected
    for got, want in zip(made, expected):
        assert type(got) is type(want) and hash(got) == hash(want)
        assert got._empty is None
    assert seq(lit(""), EMPTY) is EMPTY


def test_helpers_flatten_and_keep_lone_operands():
    a, b = lit("a"), optional(lit("b"))
    assert seq(seq(a, b), seq(b, a)) == Seq((a, b, b, a))
    assert seq(seq(b, a), seq(a, b)) == Seq((b, Bytes(b"aa"), b))
    assert alt(alt(a, b), b, a) == Alt((a, b))
    assert alt(b) is b
