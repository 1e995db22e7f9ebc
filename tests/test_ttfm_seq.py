"""`ir.seq` and `ir.alt` (their common cases in C, `_nfa_build.seq_of` / `alt_of`) are `ir._seq`
and `ir._alt`, the Python references.

Random concatenations of literals, sequences (normal ones and hand-made ones with one or no
item), the empty string, Nothing and other nodes give equal results, the same objects where the
reference returns one of its inputs, and nodes made like `ir._maker` makes them (`_empty` unset)
but for the hash, cached at once: the one the node's `__hash__` computes in Python.
"""
from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from formwork.grammar._nfa_build import alt_of, seq_of
from formwork.grammar.ir import (EMPTY, NOTHING, Alt, Bytes, Node, Repeat, Seq, _alt, _seq, alt, lit, repeat,
                                 seq)
from formwork.grammar.ir_chars import chars

_OTHERS: list[Node] = [repeat(chars([("0", "9")])), alt(lit("x"), lit("yz")), chars([(0x80, 0xFF)])]


def _random_node(rng: random.Random, depth: int = 0) -> Node:
    pick = rng.randrange(9)
    if pick <= 2:
        return lit(bytes(rng.randrange(256) for _ in range(rng.randrange(4))))  # EMPTY when no bytes
    if pick == 3 and depth < 3:
        return seq(*(_random_node(rng, depth + 1) for _ in range(rng.randrange(5))))
    if pick == 4:
        return rng.choice([EMPTY, NOTHING] if rng.random() < 0.2 else [EMPTY])
    if pick == 5 and depth == 0:  # only as a direct item: seq() of one would fail
        return Seq(tuple(rng.choice(_OTHERS + [lit("q")]) for _ in range(rng.randrange(3))))  # hand-made
    if pick == 6:
        return Bytes(b"")
    return rng.choice(_OTHERS)


def _outcome(f: Callable[[tuple], Node], items: tuple) -> Node | Exception:
    try:
        return f(items)
    except Exception as exc:  # noqa: BLE001 - compared by type
        return exc


@pytest.mark.parametrize("seed", range(20))
def test_seq_is_the_python_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        items = tuple(_random_node(rng) for _ in range(rng.randrange(6)))
        want, got = _outcome(_seq, items), _outcome(lambda xs: seq(*xs), items)
        if isinstance(want, Exception):  # a hand-made empty Seq: both fail alike
            assert type(got) is type(want), items
            continue
        assert type(got) is type(want) and got == want, items
        for item in items:
            assert (got is item) == (want is item), items
        if isinstance(got, (Bytes, Seq)) and not any(got is item for item in items):
            assert got._hash is None or got._hash == hash(want)  # None: made by the Python path
            assert hash(got) == hash(want)


def test_seq_of_leaves_the_rare_cases_to_python() -> None:
    a = lit("a")
    assert seq_of((a, NOTHING)) is None  # Nothing absorbs: the Python path returns NOTHING
    assert seq_of(()) is None and seq_of((EMPTY,)) is None  # empty: EMPTY
    assert seq_of((Seq((a,)),)) is None  # a hand-made one-item Seq
    assert seq_of((a,)) is a
    made = seq_of((a, lit("b"), Alt((a, lit("c")))))
    assert made == Seq((lit("ab"), Alt((a, lit("c")))))
    assert made._empty is None and made.items[0]._empty is None
    assert made._hash == hash(Seq((lit("ab"), Alt((a, lit("c"))))))
    assert made.items[0]._hash == hash(Bytes(b"ab"))
    with pytest.raises(TypeError):
        seq_of([a, a])


def _random_union_item(rng: random.Random) -> Node:
    pick = rng.randrange(6)
    if pick == 0:
        return NOTHING
    if pick == 1:
        return Alt(tuple(rng.choice([lit("a"), lit("b"), NOTHING, EMPTY]) for _ in range(rng.randrange(3))))
    if pick == 2:
        return alt(*(rng.choice([lit("a"), lit("b"), lit("c"), EMPTY]) for _ in range(rng.randrange(1, 4))))
    return rng.choice([lit("a"), lit("b"), lit("c"), EMPTY, seq(lit("a"), repeat(lit("b")))])


@pytest.mark.parametrize("seed", range(10))
def test_alt_is_the_python_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        items = tuple(_random_union_item(rng) for _ in range(rng.randrange(5)))
        want, got = _alt(items), alt(*items)
        assert type(got) is type(want) and got == want, items
        if isinstance(got, Alt):
            assert [id(x) for x in got.items] == [id(x) for x in want.items]  # first of equals kept
        else:
            assert got is want or (got == want and type(want) is Alt), items


def test_alt_of_leaves_the_rare_cases_to_python() -> None:
    a = lit("a")
    assert alt_of((a,)) is None and alt_of(()) is None and alt_of((NOTHING, NOTHING)) is None
    assert alt_of((a, lit("a"))) is a
    made = alt_of((Alt((a, lit("b"))), NOTHING, lit("c")))
    assert made == Alt((a, lit("b"), lit("c"))) and made._empty is None
    assert made._hash == hash(Alt((a, lit("b"), lit("c"))))
    with pytest.raises(TypeError):
        alt_of((a, ["unhashable"]))


@pytest.mark.parametrize("seed", range(5))
def test_eager_hashes_are_the_python_ones(seed: int) -> None:
    """A node made in C caches the hash its Python `__hash__` gives (`hash(items) ^ hash(name)`),
    whether its items' hashes were cached or not; off by one lane or salt fails it."""
    rng = random.Random(seed)
    for _ in range(200):
        items = [Bytes(bytes([rng.randrange(256)])) if rng.random() < 0.5 else rng.choice(_OTHERS)
                 for _ in range(rng.randrange(2, 6))]
        fresh = [Seq((item, lit("-"))) for item in items]  # hashes not cached yet
        for made in (seq_of(tuple(fresh)), alt_of(tuple(fresh)), alt_of(tuple(items))):
            if isinstance(made, (Seq, Alt)):
                assert made._hash == hash(made.items) ^ hash(type(made).__name__)


def test_an_eager_hash_below_a_deep_chain() -> None:
    """An item whose hash is not cached and nests past Python's stack: hashed bottom-up as before."""
    chain: Node = lit("a")
    for _ in range(20_000):
        chain = Seq((lit("b"), Repeat(chain, 0, None)))
    made = seq_of((lit("c"), chain))
    assert made._hash is None or made._hash == hash(made.items) ^ hash("Seq")
    assert hash(made) == hash(_seq((lit("c"), chain)))
