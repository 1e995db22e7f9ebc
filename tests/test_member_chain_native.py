"""`objects._MemberChain.rest` runs its loop in C (`_nfa_build.member_cells`): on random member
lists (required or optional members, containers, min/maxProperties, an extra member or none, any
start cell and then the whole list on that memo, few shared takes, a small mark table that
evicts) it makes the nodes, the marks list, the memo and the mark table that the Python loop it
replaced (`reference_rest`, kept here) makes."""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Optional

import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar import shared_nodes
from formwork.grammar.ir import Alt, Node, Seq, alt, lit, seq
from formwork.grammar.json_schema import objects
from formwork.grammar.shared_nodes import is_shared, share


def _holds_container(member: Node) -> bool:
    parts = member.items if isinstance(member, Seq) else (member,)
    return any(is_shared(p) or isinstance(p, Alt) and any(map(is_shared, p.items)) for p in parts)


def reference_rest(chain: objects._MemberChain, k: int, count: int, first: bool) -> Node:
    """`_MemberChain.rest` as it was in Python."""
    root = (k, count, first)
    memo, stack, members, marks = chain.memo, [root], chain.members, chain.marks
    end, cap, comma, share_takes = len(members), chain.cap, chain.comma, chain.share_takes
    while stack:
        key = stack[-1]
        if key in memo:
            stack.pop()
            continue
        k, count, first = key
        if k == end:
            memo[key] = chain._share(chain.extras(count) if first else chain.tail(count))
            continue
        member, required = members[k]
        taken = (k + 1, count if required else min(count + 1, cap), False)
        skipped = None if required else (k + 1, count, first)
        waiting = taken not in memo
        if waiting:
            stack.append(taken)
        if skipped is not None and skipped not in memo:
            stack.append(skipped)
            waiting = True
        if waiting:
            continue
        take = seq(member, memo[taken])
        if share_takes or _holds_container(member):
            marked = share(take)
            if marked is not take:
                marks.append(marked)
            take = marked
        node = take if first else seq(comma, take)
        if skipped is not None:
            node = alt(node, memo[skipped])
        marked = share(node)
        if marked is not node:
            marks.append(marked)
        memo[key] = marked
    return memo[root]


_VALUES = ("scalar", "object", "object or null", "array in a seq")


def _member(name: str, value: str) -> Node:
    """A member `name` whose value is a scalar or holds a mark (as objects and arrays do)."""
    key = lit(f'"{name}":')
    if value == "scalar":
        return seq(key, lit("1"))
    if value == "object":
        return seq(key, share(seq(lit("{"), lit(f'"{name}":0'), lit("}"))))
    if value == "object or null":
        return seq(key, alt(share(seq(lit("{"), lit(name), lit("}"))), lit("null")))
    return seq(key, lit("["), share(lit(f"{name}]")))


@st.composite
def chain_specs(draw: st.DrawFn) -> dict:
    n = draw(st.integers(0, 7))
    members = [(draw(st.sampled_from(_VALUES)), draw(st.booleans())) for _ in range(n)]
    min_props = draw(st.integers(0, 5))
    max_props = draw(st.one_of(st.none(), st.integers(0, 7)))
    return {"members": members, "extra": draw(st.sampled_from([None, "scalar", "object"])),
            "min_props": min_props, "max_props": max_props,
            "shared_takes": draw(st.integers(0, n + 1)), "max_marks": draw(st.sampled_from([1 << 16, 2, 5, 20])),
            "root": (draw(st.integers(0, n)), draw(st.integers(0, 3)), draw(st.booleans()))}


def _renew_tables(monkeypatch: pytest.MonkeyPatch, max_marks: int) -> None:
    """Empty mark tables, bounded to `max_marks` marks."""
    monkeypatch.setattr(shared_nodes, "_MARK_OF", OrderedDict())
    monkeypatch.setattr(shared_nodes, "_SHARED", {})
    monkeypatch.setattr(shared_nodes, "_MAX_MARKS", max_marks)
    monkeypatch.setattr(shared_nodes, "_evictions", 0)


def _build(spec: dict, rest: Callable[..., Node], monkeypatch: pytest.MonkeyPatch) -> Optional[tuple]:
    """In fresh mark tables: the nodes of cell `root` and then of the whole list, the chain's marks
    and memo, the mark table and the evictions."""
    _renew_tables(monkeypatch, spec["max_marks"])
    monkeypatch.setattr(objects, "MAX_SHARED_TAKES", spec["shared_takes"])
    members = [(_member(f"m{i}", value), required) for i, (value, required) in enumerate(spec["members"])]
    extra = None if spec["extra"] is None else _member("x", spec["extra"])
    chain = objects._MemberChain(members, extra, lit(","), spec["min_props"], spec["max_props"])
    if chain.max_props is not None and chain.max_props < 0:  # `body` makes no cell
        return None
    node = rest(chain, *spec["root"])
    whole = rest(chain, 0, 0, True)  # its cells past `root` in the memo already
    return ((node, whole), chain.marks, chain.memo, list(shared_nodes._MARK_OF.items()), shared_nodes._evictions)


@settings(deadline=None, max_examples=300)
@given(chain_specs())
def test_the_c_loop_makes_what_the_python_loop_made(spec: dict) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        native = _build(spec, objects._MemberChain.rest, monkeypatch)
        reference = _build(spec, reference_rest, monkeypatch)
    if native is None:
        assert reference is None
        return
    node, marks, memo, table, evictions = native
    same = (node == reference[0], marks == reference[1], memo == reference[2], table == reference[3],
            evictions == reference[4])  # (bools: the nodes' repr is exponential)
    assert same == (True,) * 5
    assert [type(m) for m in marks] == [type(m) for m in reference[1]]



def _assert_lock_free() -> None:
    """The share table's lock was released (also on the way out of an error)."""
    assert shared_nodes._SHARED_LOCK.acquire(blocking=False)
    shared_nodes._SHARED_LOCK.release()

def test_the_lock_is_free_after_an_end_cell_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception from an end cell (Python) propagates out of the C loop, the lock released."""
    chain = objects._MemberChain([(_member("a", "scalar"), False)], None, lit(","), 0, None)

    def failing(count: int, first: bool) -> Node:
        raise LookupError("end cell")

    monkeypatch.setattr(chain, "_end_cell", failing)
    with pytest.raises(LookupError, match="end cell"):
        chain.rest(0, 0, True)
    _assert_lock_free()


def test_a_malformed_member_is_refused() -> None:
    chain = objects._MemberChain([(_member("a", "scalar"), False)], None, lit(","), 0, None)
    chain.members = [_member("a", "scalar")]  # not a (member, required) pair
    with pytest.raises(ValueError, match="not \\(node, required\\)"):
        chain.rest(0, 0, True)
    _assert_lock_free()


def test_a_root_past_the_members_is_refused() -> None:
    chain = objects._MemberChain([(_member("a", "scalar"), False)], None, lit(","), 0, None)
    with pytest.raises(IndexError, match="past the members"):
        chain.rest(2, 0, True)
    _assert_lock_free()
