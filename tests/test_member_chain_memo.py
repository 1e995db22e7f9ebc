"""`_MemberChain.body` takes a member list made before from equal members, the same extra mark,
comma and counts (`objects._CHAINS`): the IR is the one a fresh build makes, and a kept list
whose marks are no longer live is built again rather than taken."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar import shared_nodes
from formwork.grammar.ir import Node, Repeat, children
from formwork.grammar.json_schema import lower_json_schema, objects
from formwork.grammar.shared_nodes import is_shared

_TYPES = ({"type": "integer"}, {"type": "string"}, {"type": "boolean"},
          {"type": "object", "properties": {"x": {"type": "integer"}}})


@st.composite
def object_schemas(draw: st.DrawFn) -> dict:
    names = draw(st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=6, unique=True))
    schema: dict = {"type": "object",
                    "properties": {n: draw(st.sampled_from(_TYPES)) for n in names},
                    "required": draw(st.lists(st.sampled_from(names), unique=True, max_size=3))}
    if draw(st.booleans()):
        schema["minProperties"] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        schema["maxProperties"] = draw(st.integers(schema.get("minProperties", 0), 6))
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.sampled_from([False, {"type": "integer"}]))
    return schema


@contextmanager
def counted_builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many member lists are built (not taken from `_CHAINS`) meanwhile."""
    built = [0]
    rest = objects._MemberChain.rest

    def counting(self: objects._MemberChain, k: int, count: int, first: bool) -> Node:
        built[0] += 1
        return rest(self, k, count, first)

    monkeypatch.setattr(objects._MemberChain, "rest", counting)
    yield built


def _dead_marks(node: Node) -> int:
    """How many of the marks in `node` are not in the table (a mark some cache kept from before
    the table was cleared by hand is one)."""
    return sum(not is_shared(m) for m in _marks(node))


def _marks(node: Node) -> list[Node]:
    found, stack, seen = [], [node], set()
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if type(n) is Repeat and n.min == 1 and n.max == 1:
            found.append(n)
        stack.extend(children(n))
    return found


@settings(deadline=None, max_examples=40)
@given(object_schemas())
def test_a_kept_member_list_is_the_fresh_one(schema: dict) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch, counted_builds(monkeypatch) as built:
        first = lower_json_schema(schema).node
        before = built[0]
        again = lower_json_schema(schema).node
        assert built[0] == before  # every list taken
        objects._CHAINS.clear()
        fresh = lower_json_schema(schema).node
    same = again == first and again == fresh  # (a bool: the nodes' repr is exponential)
    assert same
    assert _dead_marks(again) == _dead_marks(fresh)


def test_a_list_whose_marks_died_is_built_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the marks dropped from the table (as eviction drops the oldest), lowering again builds
    the member lists anew, with live marks as a fresh build has them: a kept list would bring
    back marks the NFA builder no longer shares."""
    schema = {"type": "object", "minProperties": 1, "additionalProperties": False,
              "properties": {n: {"type": "string"} for n in "pqrstu"}}
    saved = shared_nodes._MARK_OF.copy(), shared_nodes._SHARED.copy()
    try:
        with counted_builds(monkeypatch) as built:
            lower_json_schema(schema)
            with shared_nodes._SHARED_LOCK:
                shared_nodes._MARK_OF.clear()
                shared_nodes._SHARED.clear()
            before = built[0]
            node = lower_json_schema(schema).node
            assert built[0] > before
        objects._CHAINS.clear()
        fresh = lower_json_schema(schema).node
        same = node == fresh
        assert same and len(_marks(node)) > 6 and _dead_marks(node) == _dead_marks(fresh)
    finally:
        with shared_nodes._SHARED_LOCK:
            shared_nodes._MARK_OF.update(saved[0])
            shared_nodes._SHARED.update(saved[1])


def test_equal_members_are_one_node_across_lowerings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A declared member equal to one made before is that node (`objects._member_node`): the
    member lists' memo and marks then compare it by identity."""
    made: list[list[tuple[Node, bool]]] = []
    init = objects._MemberChain.__init__

    def recording(self: objects._MemberChain, members: list, *args: object) -> None:
        made.append(members)
        init(self, members, *args)

    monkeypatch.setattr(objects._MemberChain, "__init__", recording)
    for _ in range(2):  # equal schemas, distinct dicts
        lower_json_schema({"type": "object", "properties": {"id": {"type": "string"},
                                                            "n": {"type": "integer", "minimum": 3}}})
    first, second = made
    assert len(first) == 2 and all(a is b for (a, _), (b, _) in zip(first, second))
