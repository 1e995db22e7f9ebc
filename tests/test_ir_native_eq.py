"""IR nodes compare in C (`_nfa_build.install_eq`): `==` and `!=` give what the classes' Python
`__eq__` gives (structural: same class, equal compared fields, sub-nodes alike), checked against
a recursive reference and the Python `__eq__` itself, without a Python frame."""
from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar import ir
from formwork.grammar._nfa_build import install_eq

from tests.test_ir_native_hash import SAMPLES, _deep, _python_calls, trees

KINDS = tuple(SAMPLES)


def reference_eq(x: object, y: object) -> bool:
    """Structural equality by recursion over the compared fields (small trees only)."""
    if not isinstance(x, ir.Node) or not isinstance(y, ir.Node):
        return x == y
    if type(x) is not type(y):
        return False
    for name in ir._compared(type(x)):
        a, b = getattr(x, name), getattr(y, name)
        if isinstance(a, tuple) and isinstance(b, tuple):
            if len(a) != len(b) or not all(map(reference_eq, a, b)):
                return False
        elif not reference_eq(a, b):
            return False
    return True


def copy(node: ir.Node) -> ir.Node:
    """An equal node made of fresh objects all the way down (no hash cached)."""
    kind = type(node)
    values = []
    for name in ir._compared(kind):
        value = getattr(node, name)
        if isinstance(value, ir.Node):
            value = copy(value)
        elif isinstance(value, tuple) and value and isinstance(value[0], ir.Node):
            value = tuple(map(copy, value))
        values.append(value)
    return kind(*values)


def python_eq(x: ir.Node, y: object) -> bool:
    """What the class's Python `__eq__` says (NotImplemented read as `==` reads it: False)."""
    got = type(x).__dict__["__eq__"](x, y)
    return False if got is NotImplemented else got


@settings(max_examples=300, deadline=None)
@given(trees, trees, st.booleans())
def test_eq_is_the_python_eq(x, y, hash_first):
    for a, b in ((x, y), (x, copy(x)), (copy(y), y)):
        if hash_first:  # cached hashes that differ settle a pair at once; equal ones do not
            hash(a), hash(b)
        expected = reference_eq(a, b)
        assert (a == b) is expected and (a != b) is (not expected)
        assert (b == a) is expected
        assert python_eq(a, b) is expected


@given(trees)
def test_other_objects_are_unequal(x):
    assert x != 3 and not x == "x" and x != None  # noqa: E711
    other = ir.RuleRef("zz") if type(x) is not ir.RuleRef else ir.EMPTY
    assert x != other and not x == other


@given(st.sampled_from(KINDS))
def test_a_node_compares_without_a_python_frame(kind):
    a, b = SAMPLES[kind](), SAMPLES[kind]()
    assert a is not b
    assert _python_calls(lambda: a == b) == []
    assert _python_calls(lambda: a != b) == []
    assert {a: 1}[b] == 1


def test_deep_copies_compare_past_the_recursion_limit():
    depth = sys.getrecursionlimit() * 3
    a, b = _deep(depth, [0, 1, 2, 3, 4]), _deep(depth, [0, 1, 2, 3, 4])
    assert a == b and not a != b
    assert _python_calls(lambda: a == b) == []
    c = _deep(depth, [0, 1, 2, 3])  # another kind at the fifth level, all the way down
    assert a != c


def test_a_difference_at_the_bottom_of_a_deep_chain_is_found():
    depth = sys.getrecursionlimit() * 3
    a, b = _deep(depth, [0, 2]), _deep(depth, [0, 2])
    bottom = b
    while not isinstance(bottom, ir.Bytes):
        bottom = bottom.items[1] if isinstance(bottom, ir.Seq) else bottom.item
    object.__setattr__(bottom, "value", b"y")  # the leaf both chains end in, made different
    assert a != b and not a == b


def test_a_shared_graph_compares_each_pair_once():
    a, b = ir.Bytes(b"a"), ir.Bytes(b"a")
    for level in range(60):  # 2**60 paths: compared path by path this would never end
        a, b = ir.Seq((a, a, ir.RuleRef(str(level)))), ir.Seq((b, b, ir.RuleRef(str(level))))
    assert a == b
    object.__setattr__(b.items[0].items[0].items[0], "items", (ir.EMPTY,))
    assert a != b


class _Name(str):
    """A str subclass with its own equality: a field compared with its `==`."""

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self.lower(), str(other).lower())

    __hash__ = str.__hash__


def test_odd_fields_compare_with_their_own_eq():
    assert ir.RuleRef(_Name("N")) == ir.RuleRef("n")
    assert ir.Seq((ir.EMPTY, ir.RuleRef(_Name("N")))) == ir.Seq((ir.EMPTY, ir.RuleRef("n")))


def test_a_class_without_a_c_hash_is_left_alone():
    class Plain:
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    assert install_eq(Plain) is False
    assert install_eq(ir.Seq) is True


def test_assigning_dunder_eq_later_takes_effect():
    class Fresh(ir.Node):
        label: str

    kind = ir._node(Fresh)
    assert kind("a") == kind("a") and kind("a") != kind("b")
    assert _python_calls(lambda: kind("a") == kind("a")) == ["__init__", "__init__"]
    kind.__eq__ = lambda self, other: True
    assert kind("a") == kind("b")
