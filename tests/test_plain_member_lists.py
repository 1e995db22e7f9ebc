"""Uncounted member lists with few places to start are plain trees (`objects._plain`): the same
language as the shared cells they replace (equal canonical minimal DFAs), and the IR does differ,
so the comparison is between the two forms."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar.automaton import compile_dfa
from formwork.grammar.ir import Node
from formwork.grammar.json_schema import lower_json_schema, objects

_CLOSED = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "string", "maxLength": 3}},
           "additionalProperties": False}
_VALUES = ({"type": "integer"}, {"type": "string", "maxLength": 4}, {"type": "boolean"}, _CLOSED,
           {"type": "array", "items": {"type": "integer"}, "maxItems": 2})


@st.composite
def object_schemas(draw: st.DrawFn) -> dict:
    names = draw(st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=7, unique=True))
    return {"type": "object", "properties": {n: draw(st.sampled_from(_VALUES)) for n in names},
            "required": draw(st.lists(st.sampled_from(names), unique=True, max_size=4)),
            "additionalProperties": draw(st.sampled_from([False, {"type": "integer"}, {"enum": [1, "a"]}]))}


def _lowered(schema: dict, plain_places: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Node, int]:
    """The schema's IR with lists of up to `plain_places` places plain, and how many were."""
    monkeypatch.setattr(objects, "MAX_PLAIN_FIRSTS", plain_places)
    objects._CHAINS.clear()  # a list kept from the other form would be taken
    plain = [0]
    build = objects._MemberChain.plain_body

    def counting(self: objects._MemberChain) -> Node:
        plain[0] += 1
        return build(self)

    monkeypatch.setattr(objects._MemberChain, "plain_body", counting)
    node = lower_json_schema(schema).node
    objects._CHAINS.clear()
    return node, plain[0]


def _minimal(node: Node) -> tuple[bytes, bytes]:
    dfa = compile_dfa(node)
    dfa = dfa.materialize() if dfa.lazy else dfa
    return np.asarray(dfa.table, dtype=np.int32).tobytes(), np.asarray(dfa.accepting, dtype=bool).tobytes()


@settings(deadline=None, max_examples=40)
@given(object_schemas())
def test_plain_and_shared_member_lists_have_one_language(schema: dict) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        shared, none_plain = _lowered(schema, 0, monkeypatch)
        plain, some_plain = _lowered(schema, 100, monkeypatch)
    assert none_plain == 0 and some_plain > 0
    differ = plain != shared  # (a bool: the nodes' repr is exponential)
    assert differ
    assert _minimal(plain) == _minimal(shared)


def test_the_criterion_counts_places_to_start_and_containers_copied() -> None:
    def members(required: str, container_at: int = -1) -> list[tuple[Node, bool]]:
        scalar = lower_json_schema({"type": "integer"}).node
        box = lower_json_schema(_CLOSED).node
        return [(box if k == container_at else scalar, r == "r") for k, r in enumerate(required)]

    assert objects._plain(members("oooor"), 0)  # 5 places
    assert not objects._plain(members("ooooor"), 0)  # 6 places
    assert objects._plain(members("oooo"), 0)  # 4 optional + the extras' place
    assert not objects._plain(members("ooooo"), 0)
    assert not objects._plain(members("r"), 1)  # counted
    assert objects._plain(members("roooooooo", container_at=5), 0)  # first required: one copy each
    assert objects._plain(members("ooor", container_at=0), 0)
    assert not objects._plain(members("ooor", container_at=1), 0)  # built twice
