"""IR nodes hash in C (`_nfa_build.install_hash`): the same hash as the classes' Python `__hash__`
(checked against a reference that recomputes it from the fields), read from the `_hash` slot or,
while their sub-nodes' hashes are cached, computed and cached there without a Python frame; the
Python `__hash__` makes the rest."""
from __future__ import annotations

import sys
from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar import ir
from formwork.grammar._nfa_build import install_hash

KINDS = (ir.Empty, ir.Nothing, ir.Bytes, ir.ByteSet, ir.Seq, ir.Alt, ir.Repeat, ir.And, ir.Not, ir.RuleRef)


class _Hashed:
    """Stands for a sub-node in the reference: hashes as the hash given."""

    __slots__ = ("h",)

    def __init__(self, h: int) -> None:
        self.h = h

    def __hash__(self) -> int:
        return self.h


def _fields(node: ir.Node, known: dict[int, int]) -> object:
    """The compared fields `ir._cached_hash` hashes, sub-nodes standing as their reference hashes."""
    sub = lambda x: _Hashed(known[id(x)])  # noqa: E731
    kind = type(node)
    if kind in (ir.Seq, ir.Alt):
        return tuple(map(sub, node.items))
    if kind is ir.Repeat:
        return (sub(node.item), node.min, node.max)
    if kind is ir.And:
        return (sub(node.a), sub(node.b))
    if kind is ir.Not:
        return (sub(node.a), node.over_bytes)
    return {ir.Bytes: lambda: node.value, ir.ByteSet: lambda: node.ranges, ir.RuleRef: lambda: node.name}.get(
        kind, lambda: ())()


def reference_hash(root: ir.Node) -> int:
    """The hash of `root` as the Python `__hash__` defines it (`reference_hashes`)."""
    return reference_hashes(root)[id(root)]


def reference_hashes(root: ir.Node) -> dict[int, int]:
    """The hash of every node of `root`'s graph (by id) as the Python `__hash__` defines it,
    computed bottom-up with no node's own hash: hash(compared fields) ^ hash(class name)."""
    known: dict[int, int] = {}
    stack = [root]
    while stack:
        top = stack[-1]
        if id(top) in known:
            stack.pop()
            continue
        pending = [child for child in ir.children(top) if id(child) not in known]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        known[id(top)] = hash(_fields(top, known)) ^ hash(type(top).__name__)
    return known


def _python_hash(node: ir.Node) -> int:
    """`hash()` as CPython's dispatcher reads the class's Python `__hash__`: -1 as -2, an int past
    64 bits by its own hash."""
    h = type(node).__dict__["__hash__"](node)
    if -(2**63) <= h < 2**63:
        return -2 if h == -1 else h
    return hash(h)


leaves = st.one_of(
    st.just(ir.EMPTY), st.just(ir.NOTHING), st.binary(min_size=1, max_size=4).map(ir.Bytes),
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)).map(sorted).map(tuple), min_size=1,
             max_size=3).map(ir.ByteSet),
    st.text(max_size=3).map(ir.RuleRef))


def _composites(children: st.SearchStrategy) -> st.SearchStrategy:
    items = st.lists(children, min_size=2, max_size=4).map(tuple)
    return st.one_of(
        items.map(ir.Seq), items.map(ir.Alt), items.map(lambda xs: ir.seq(*xs)), items.map(lambda xs: ir.alt(*xs)),
        st.tuples(children, st.integers(0, 3), st.none() | st.integers(3, 5)).map(lambda t: ir.Repeat(*t)),
        st.tuples(children, children).map(lambda t: ir.And(*t)),
        st.tuples(children, st.booleans()).map(lambda t: ir.Not(*t)))


trees = st.recursive(leaves, _composites, max_leaves=20)


def _nodes(root: ir.Node) -> list[ir.Node]:
    """Every node of `root`'s graph, once each, root first."""
    seen, out, stack = set(), [], [root]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen.add(id(node))
            out.append(node)
            stack.extend(ir.children(node))
    return out


def _deep(depth: int, kinds: list[int]) -> ir.Node:
    """A chain `depth` nodes deep (past Python's recursion limit), the kind at each level from
    `kinds`, none of it hashed."""
    node: ir.Node = ir.Bytes(b"x")
    for level in range(depth):
        kind = kinds[level % len(kinds)]
        if kind == 0:
            node = ir.Seq((ir.Bytes(b"a"), node))
        elif kind == 1:
            node = ir.Alt((node, ir.RuleRef("r")))
        elif kind == 2:
            node = ir.Repeat(node, 0, level % 3 or None)
        elif kind == 3:
            node = ir.And(ir.EMPTY, node)
        else:
            node = ir.Not(node, level % 2 == 0)
    return node


@settings(max_examples=200, deadline=None)
@given(trees, st.data())
def test_hash_is_the_python_hash_whatever_is_hashed_first(root, data):
    nodes = _nodes(root)
    expected = reference_hashes(root)
    for node in data.draw(st.permutations(nodes)):  # sub-nodes hashed before or after their parents
        h = expected[id(node)]
        assert hash(node) == (-2 if h == -1 else h)
    assert all(hash(n) == _python_hash(n) for n in nodes)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=5), st.integers(0, 3))
def test_deep_ir_hashes_past_the_recursion_limit(kinds, hashed_first):
    depth = sys.getrecursionlimit() * 2 + 50
    root = _deep(depth, kinds)
    chain = _nodes(root)
    for node in chain[::len(chain) // (hashed_first + 1)][1:]:  # a few sub-nodes hashed before the root
        hash(node)
    expected = reference_hashes(root)
    assert hash(root) == expected[id(root)] == _python_hash(root)
    assert all(hash(n) == expected[id(n)] for n in chain)


def _python_calls(action) -> list[str]:
    """The names of the Python functions `action` calls."""
    calls: list[str] = []

    def profile(frame, event, arg) -> None:
        if event == "call" and frame.f_code is not action.__code__:
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return calls


SAMPLES = {ir.Empty: lambda: ir.Empty(), ir.Nothing: lambda: ir.Nothing(), ir.Bytes: lambda: ir.Bytes(b"b"),
           ir.ByteSet: lambda: ir.ByteSet(((1, 9),)), ir.Seq: lambda: ir.Seq((ir.Bytes(b"a"), ir.RuleRef("b"))),
           ir.Alt: lambda: ir.Alt((ir.Bytes(b"a"), ir.RuleRef("b"))), ir.Repeat: lambda: ir.Repeat(ir.Bytes(b"q"), 1, 4),
           ir.And: lambda: ir.And(ir.RuleRef("x"), ir.EMPTY), ir.Not: lambda: ir.Not(ir.RuleRef("x")),
           ir.RuleRef: lambda: ir.RuleRef("r")}


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.__name__)
def test_a_node_hashes_without_a_python_frame(kind):
    node = SAMPLES[kind]()
    assert type(node) is kind and kind.__hash__ is kind.__dict__["__hash__"]  # the Python one stays
    for child in ir.children(node):
        hash(child)
    assert node._hash is None
    assert _python_calls(lambda: hash(node)) == []  # made in C, and cached
    assert node._hash == reference_hash(node)
    table = OrderedDict({node: 1})
    for lookup in (lambda: hash(node), lambda: {node: 1}, lambda: table.move_to_end(node), lambda: node in {node}):
        assert "__hash__" not in _python_calls(lookup)


def test_sub_nodes_not_hashed_yet_are_hashed_in_c_first():
    node = _deep(sys.getrecursionlimit() * 3, [0, 1, 2, 3, 4])
    assert _python_calls(lambda: hash(node)) == []
    expected = reference_hashes(node)
    assert all(n._hash == expected[id(n)] for n in _nodes(node))


class _Name(str):
    """A str subclass: a field kind the C hash leaves to the Python `__hash__`."""


def test_an_odd_field_below_leaves_the_nodes_above_to_the_python_hash():
    odd = ir.RuleRef(_Name("n"))
    node = ir.Not(ir.Seq((ir.Bytes(b"a"), odd)))
    assert _python_calls(lambda: hash(node)) == ["__hash__"] * 3  # Not, Seq, then RuleRef
    assert all(n._hash == reference_hash(n) for n in _nodes(node))


def test_odd_fields_are_left_to_the_python_hash():
    node = ir.RuleRef(_Name("n"))
    assert _python_calls(lambda: hash(node)) == ["__hash__"]
    assert hash(node) == hash("n") ^ hash("RuleRef")
    node = ir.Repeat(ir.RuleRef("n"), True, None)  # a bool is a plain value: read in C
    hash(node.item)
    assert _python_calls(lambda: hash(node)) == [] and hash(node) == reference_hash(node)


def test_odd_cached_values_read_as_hash_reads_them():
    for cached, expected in ((-1, -2), (2**70, hash(2**70)), (-(2**64) - 1, hash(-(2**64) - 1)), (5, 5)):
        node = ir.RuleRef("n")
        object.__setattr__(node, "_hash", cached)
        assert hash(node) == expected == _python_hash(node)
    node = ir.RuleRef("m")
    object.__setattr__(node, "_hash", True)  # not an exact int: left to the Python hash
    assert hash(node) == 1


def _fresh_class() -> type:
    """A new IR node class made as `ir`'s are (given the C hash)."""
    class Fresh(ir.Node):
        label: str

    return ir._node(Fresh)


def test_assigning_dunder_hash_later_takes_effect():
    kind = _fresh_class()
    node = kind("a")
    assert hash(node) == reference_hash_of_leaf(node)
    kind.__hash__ = lambda self: 7
    assert hash(node) == 7 and hash(kind("b")) == 7


def reference_hash_of_leaf(node: ir.Node) -> int:
    return hash(node.label) ^ hash(type(node).__name__)


def test_a_subclass_hashes_by_the_python_hash_it_inherits():
    kind = _fresh_class()
    sub = type("Sub", (kind,), {"__slots__": ()})
    assert hash(sub("z")) == hash("z") ^ hash("Fresh")
    assert "__hash__" in _python_calls(lambda: hash(sub("y")))


def test_install_hash_refuses_what_it_cannot_read():
    class Plain:
        def __hash__(self) -> int:
            return 3

    assert install_hash(Plain, (), 0) is False and hash(Plain()) == 3
    assert install_hash(int, (), 0) is False
    with pytest.raises(TypeError):
        install_hash(3, (), 0)


def test_a_deep_tree_over_an_odd_field_is_hashed_by_the_python_hash_bottom_up():
    node: ir.Node = ir.RuleRef(_Name("n"))
    for level in range(sys.getrecursionlimit() * 2):
        node = ir.Not(node) if level % 2 else ir.Repeat(node, 1, None)
    expected = reference_hashes(node)
    assert hash(node) == expected[id(node)]
    assert all(n._hash == expected[id(n)] for n in _nodes(node))
