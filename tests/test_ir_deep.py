"""IR nodes nested past Python's stack limit hash, compare and rebuild without recursion (issue 21:
lowered IR nests ~1,850 deep in Biome's configuration schema), and the walks agree with the plain
recursive definitions on random trees."""
from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar.automaton import inline_rules
from formwork.grammar.errors import RecursionNotSupportedError, UndefinedRuleError
from formwork.grammar.ir import EMPTY, Alt, And, Grammar, Node, Not, Repeat, RuleRef, Seq, children, lit
from formwork.grammar.ir_chars import chars
from formwork.grammar.ir_walk import dependency_order, replace_refs
from formwork.grammar.shared_nodes import is_shared, share

DEEP = 3 * sys.getrecursionlimit() + 1000


def chain(depth: int, leaf: Node, kind: str = "seq") -> Node:
    """`depth` levels of a composite node around `leaf`, made without the normalising helpers
    (`seq` would flatten a Seq of a Seq)."""
    node = leaf
    for i in range(depth):
        if kind == "seq":
            node = Seq((lit("("), node))
        elif kind == "alt":
            node = Alt((lit("x"), node))
        elif kind == "repeat":
            node = Repeat(node, 0, i % 3 + 1)
        else:
            node = And(node, chars([("a", "z")])) if i % 2 else Not(node)
    return node


@pytest.mark.parametrize("kind", ["seq", "alt", "repeat", "and-not"])
def test_deep_copies_hash_and_compare_without_recursion(kind: str) -> None:
    a, b = chain(DEEP, lit("a"), kind), chain(DEEP, lit("a"), kind)
    other = chain(DEEP, lit("b"), kind)
    assert a is not b and hash(a) == hash(b) and a == b and not a != b
    assert a != other and not a == other
    assert {a: 1}[b] == 1 and other not in {a: 1}
    fresh_a, fresh_b = chain(DEEP, lit("a"), kind), chain(DEEP, lit("a"), kind)
    assert fresh_a == fresh_b and hash(fresh_a) == hash(fresh_b)  # compared before either is hashed


def test_equal_graphs_compare_each_pair_of_nodes_once() -> None:
    """Two copies of 60 stacked diamonds (2^60 paths) compare in about their size."""
    def diamonds(n: int) -> Node:
        node: Node = lit("z")
        for _ in range(n):
            node = Seq((Alt((lit("a"), node)), Alt((lit("b"), node))))
        return node

    assert diamonds(60) == diamonds(60) and diamonds(60) != diamonds(59)


def test_replace_refs_rebuilds_deep_trees_keeping_marks_and_untouched_nodes() -> None:
    untouched = chain(DEEP, lit("u"), "repeat")
    marked = share(Seq((lit("{"), RuleRef("v"), lit("}"))))
    root = chain(DEEP, Seq((marked, untouched)), "repeat")
    out = replace_refs(root, lambda ref: lit("1"), {})
    node = out
    for _ in range(DEEP):
        assert type(node) is Repeat
        node = node.item
    first, second = node.items
    assert is_shared(first) and first.item == lit("{1}")  # marked again, not plain (x){1,1} = x
    assert second is untouched
    assert replace_refs(untouched, lambda ref: EMPTY, {}) is untouched


def test_inline_rules_follows_a_long_chain_of_rules() -> None:
    n = DEEP
    rules = {f"r{i}": Seq((lit("("), RuleRef(f"r{i + 1}"), lit(")"))) for i in range(n)}
    rules[f"r{n}"] = lit("x")
    assert inline_rules(Grammar(rules, "r0")) == lit("(" * n + "x" + ")" * n)  # seq() merges literals


def test_inline_rules_refuses_cycles_and_undefined_rules() -> None:
    with pytest.raises(RecursionNotSupportedError, match="a -> b -> a"):
        inline_rules(Grammar({"s": RuleRef("a"), "a": Seq((lit("x"), RuleRef("b"))), "b": RuleRef("a")}, "s"))
    with pytest.raises(UndefinedRuleError, match="'c'"):
        inline_rules(Grammar({"s": Seq((RuleRef("c"), lit("x")))}, "s"))


def _recursive_eq(a: Node, b: Node) -> bool:
    """Structural equality by the textbook recursion (small trees only)."""
    if type(a) is not type(b):
        return False
    ka, kb = children(a), children(b)
    if not ka and not kb:
        return repr(a) == repr(b)
    own = {k: v for k, v in a.__class__.__dataclass_fields__.items() if v.compare}
    scalars = [getattr(a, k) == getattr(b, k) for k in own if not isinstance(getattr(a, k), (Node, tuple))]
    return all(scalars) and len(ka) == len(kb) and all(map(_recursive_eq, ka, kb))


def _trees(leaves: list[Node]) -> st.SearchStrategy[Node]:
    return st.recursive(
        st.sampled_from(leaves),
        lambda sub: st.one_of(
            st.lists(sub, min_size=1, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(sub, min_size=1, max_size=3).map(lambda xs: Alt(tuple(xs))),
            st.tuples(sub, st.integers(0, 2), st.integers(0, 2)).map(lambda t: Repeat(t[0], t[1], t[1] + t[2])),
            st.tuples(sub, sub).map(lambda t: And(*t)),
            st.tuples(sub, st.booleans()).map(lambda t: Not(*t))),
        max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(_trees([lit("a"), lit("b"), EMPTY, chars("ab")]), _trees([lit("a"), lit("b"), EMPTY, chars("ab")]))
def test_equality_and_hash_agree_with_the_recursive_definition(a: Node, b: Node) -> None:
    assert (a == b) == _recursive_eq(a, b)
    if a == b:
        assert hash(a) == hash(b)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n))))
def test_dependency_order_puts_each_name_after_what_it_reaches(drawn) -> None:
    n, edges = drawn
    targets = {f"r{i}": [f"r{j}" for j in edges[i]] for i in range(n)}
    cycles: list[list[str]] = []

    def on_cycle(path: list[str]) -> Exception:
        cycles.append(path)
        return ValueError(path)

    try:
        order = dependency_order(["r0"], targets.__getitem__, on_cycle)
    except ValueError:
        path = cycles[0]
        assert path[0] == path[-1] and all(b in targets[a] for a, b in zip(path, path[1:]))
        return
    reach, todo = {"r0"}, ["r0"]
    while todo:
        for t in targets[todo.pop()]:
            if t not in reach:
                reach.add(t)
                todo.append(t)
    assert sorted(order) == sorted(reach)
    position = {name: i for i, name in enumerate(order)}
    assert all(position[t] < position[a] for a in order for t in targets[a])


def test_the_repr_of_a_shared_graph_is_bounded():
    # each level refers twice to the one below: the full repr would have 2**60 leaves
    from formwork.grammar.ir import REPR_DEPTH, Alt, Bytes, Seq

    node = Bytes(b"x")
    for level in range(60):
        node = Alt((Seq((node, Bytes(b"%d" % level))), node))
    text = repr(node)
    assert len(text) < 10_000 and text.startswith("Alt(items=(Seq(items=(Alt(") and "..." in text
    assert text.count("Bytes(value=b'59')") == 1 and REPR_DEPTH < text.count("(")
    assert repr(Bytes(b"x")) == "Bytes(value=b'x')"
