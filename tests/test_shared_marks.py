"""`shared_nodes.share`: marks are interned by the node they mark, and the table the NFA builder
reads (`shared_marks`) holds exactly the live marks, also after the oldest are evicted."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar import shared_nodes
from formwork.grammar._nfa_build import share_in
from formwork.grammar.ir import EMPTY, NOTHING, Bytes, Repeat, Seq
from formwork.grammar.shared_nodes import is_shared, share, shared_marks


def _node(text: bytes) -> Seq:
    return Seq((Bytes(b"<"), Bytes(text)))


def test_a_mark_is_the_checked_repeat_and_is_interned() -> None:
    node = _node(b"interned mark")
    mark = share(node)
    assert type(mark) is Repeat and mark == Repeat(node, 1, 1) and hash(mark) == hash(Repeat(node, 1, 1))
    assert (mark.item, mark.min, mark.max) == (node, 1, 1)
    again = share(_node(b"interned mark"))  # an equal, distinct node finds the same mark
    assert again is mark and again.item is node
    assert is_shared(mark) and is_shared(Repeat(_node(b"interned mark"), 1, 1))
    assert shared_marks()[Repeat(node, 1, 1)] is mark
    assert share(EMPTY) is EMPTY and share(NOTHING) is NOTHING


@settings(deadline=None, max_examples=30)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=60), st.integers(1, 5))
def test_eviction_keeps_the_builder_table_in_step(uses: list[int], limit: int) -> None:
    """With room for `limit` marks, the live marks are the most recently used nodes (a hit renews a
    mark), each in the builder's table: a table past `limit` drops its oldest quarter (at least one)
    in one eviction round; an evicted mark is no longer shared."""
    saved = shared_nodes._MAX_MARKS, shared_nodes._MARK_OF.copy(), shared_nodes._SHARED.copy()
    shared_nodes._MAX_MARKS = limit
    try:
        with shared_nodes._SHARED_LOCK:
            shared_nodes._MARK_OF.clear()
            shared_nodes._SHARED.clear()
        recent: list[int] = []
        marks = {}
        rounds = shared_nodes.evictions()
        for i in uses:
            marks[i] = share(_node(b"evict %d" % i))
            recent = [j for j in recent if j != i] + [i]
            if len(recent) > limit:
                recent = recent[-(limit - max(1, limit // 4)):] if limit > 1 else []
                rounds += 1
        live = recent
        assert shared_nodes.evictions() == rounds
        assert len(shared_marks()) == len(live)
        for i in live:
            assert shared_marks()[marks[i]] is marks[i]
        for i in set(uses) - set(live):
            assert not is_shared(marks[i])
    finally:  # the process's marks as they were
        shared_nodes._MAX_MARKS = saved[0]
        with shared_nodes._SHARED_LOCK:
            shared_nodes._MARK_OF.clear()
            shared_nodes._MARK_OF.update(saved[1])
            shared_nodes._SHARED.clear()
            shared_nodes._SHARED.update(saved[2])


_LEAVES = st.builds(Bytes, st.binary(min_size=1, max_size=3))
_TREES = st.recursive(_LEAVES, lambda sub: st.one_of(
    st.lists(sub, min_size=2, max_size=3).map(lambda items: Seq(tuple(items))),
    st.tuples(sub, st.integers(0, 2), st.one_of(st.none(), st.integers(2, 4))).map(
        lambda t: Repeat(t[0], t[1], t[2]))), max_leaves=6)


@settings(deadline=None, max_examples=60)
@given(_TREES, st.booleans())
def test_a_new_mark_caches_the_hash_its_repeat_computes(node, hashed_first: bool) -> None:
    """`share` fills a new mark's `_hash` slot itself: with the value `Repeat.__hash__` computes
    for an equal Repeat made by its constructor (else the NFA builder, which reads the slot, would
    miss an equal mark).  The marked node may be hashed already or not."""
    saved = shared_nodes._MARK_OF.copy(), shared_nodes._SHARED.copy()
    try:
        with shared_nodes._SHARED_LOCK:
            shared_nodes._MARK_OF.clear()
            shared_nodes._SHARED.clear()
        if hashed_first:
            hash(node)
        mark = share(node)
        if mark is node:  # EMPTY / NOTHING are not marked
            return
        reference = Repeat(node, 1, 1)
        assert object.__getattribute__(reference, "_hash") is None
        assert mark._hash == hash(reference) == hash(mark)
        assert shared_marks()[reference] is mark
    finally:
        with shared_nodes._SHARED_LOCK:
            shared_nodes._MARK_OF.clear()
            shared_nodes._MARK_OF.update(saved[0])
            shared_nodes._SHARED.clear()
            shared_nodes._SHARED.update(saved[1])


def test_share_in_refuses_tables_of_other_types() -> None:
    """`share_in` (the C side of `share`) works on the module's tables only: an OrderedDict of
    marks by node and a dict of marks."""

    with pytest.raises(TypeError, match="share_in"):
        share_in(_node(b"x"), {}, {})
    with pytest.raises(TypeError, match="share_in"):
        share_in(_node(b"x"), shared_nodes._MARK_OF, shared_nodes._MARK_OF)
