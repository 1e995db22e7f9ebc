"""Hashing and comparing IR nodes without recursion (lowered IR nests past Python's stack limit:
Biome's configuration schema ~1,850 deep).  A node class with sub-nodes carries `_sub_nodes` (a
node -> tuple of its sub-nodes) and `_scalars` (its other compared fields, or None); a leaf class
has `_sub_nodes` None.  Hashes are cached in each node's `_hash` slot (see `ir._node`)."""
from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter, is_
from typing import Any

_hash_of = attrgetter("_hash")


def sub_nodes_getter(fields: tuple[str, ...]) -> Callable[[Any], tuple]:
    """`_sub_nodes` of a class whose sub-nodes are `fields` (("items",): a tuple of them)."""
    if fields == ("items",):
        return attrgetter("items")
    if len(fields) == 1:
        get = attrgetter(fields[0])
        return lambda node: (get(node),)
    return attrgetter(*fields)


def composite_hash(fields_of: Callable[[Any], Any], salt: int,
                   set_hash: Callable[[Any, int], None]) -> Callable[[Any], int]:
    """The `__hash__` of a class with sub-nodes: the hash of `fields_of(node)` (its compared
    fields) mixed with `salt`, cached with `set_hash`.  That asks the sub-nodes for theirs, a
    Python frame a level while they are not cached yet: where such a chain runs past Python's
    stack, the nodes below are hashed bottom-up instead (`_hash_below`; the usual case, sub-nodes
    already hashed, pays nothing for it: hashing is hot in lowering)."""
    def __hash__(self: Any) -> int:
        cached = self._hash
        if cached is None:
            try:
                cached = hash(fields_of(self)) ^ salt
            except RecursionError:  # from the levels below, or from this one, if at the limit
                _hash_below(self)
                cached = hash(fields_of(self)) ^ salt
            set_hash(self, cached)
        return cached

    return __hash__


def _hash_below(node: Any) -> None:
    """Cache the hash of every node below `node` whose hash is not cached, sub-nodes first, with
    an explicit stack (a hash computed by the fields' tuple recurses once per level)."""
    stack = [child for child in type(node)._sub_nodes(node) if child._hash is None]
    while stack:
        top = stack[-1]
        if top._hash is not None:
            stack.pop()
            continue
        sub = type(top)._sub_nodes
        pending = [] if sub is None else [child for child in sub(top) if child._hash is None]
        if pending:
            stack.extend(pending)
        else:
            stack.pop()
            hash(top)  # its sub-nodes' hashes are cached: no recursion


def composite_eq(fields: tuple[str, ...], scalars: tuple[str, ...] | None) -> Callable[[Any, object], bool]:
    """The `__eq__` of a class whose sub-nodes are `fields` and other compared fields `scalars`:
    structural, without recursion.  The sub-nodes are usually the same objects (checked in C);
    else `_same_below` compares the pairs that differ."""
    if fields == ("items",):
        def __eq__(self: Any, other: object) -> bool:
            if type(other) is not type(self):
                return NotImplemented
            xs, ys = self.items, other.items
            return len(xs) == len(ys) and (all(map(is_, xs, ys)) or _same_below(xs, ys))

        return __eq__
    sub_nodes = attrgetter(*fields)
    others = attrgetter(*scalars) if scalars else None

    def __eq__(self: Any, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        if others is not None and others(self) != others(other):
            return False
        x, y = sub_nodes(self), sub_nodes(other)
        if len(fields) == 1:
            return x is y or _same_below((x,), (y,))
        return all(map(is_, x, y)) or _same_below(x, y)

    return __eq__


def _same_below(xs: tuple, ys: tuple) -> bool:
    """Whether the sub-nodes `xs` and `ys` (as many) are equal pairwise.  The usual unequal-object
    pair is a fresh copy of a node made of the same objects (a member rebuilt around interned
    parts) or an equal leaf: those are settled here, one level down; the differing sub-nodes of any
    other pair go to `_same_deep`."""
    deeper = None
    for x, y in zip(xs, ys):
        if x is y:
            continue
        kind = type(x)
        if kind is not type(y):
            return False
        hx, hy = x._hash, y._hash
        if hx is not None and hy is not None and hx != hy:
            return False
        sub = kind._sub_nodes
        if sub is None:  # a leaf: its own fields
            if x != y:
                return False
            continue
        scalars = kind._scalars
        if scalars is not None and scalars(x) != scalars(y):
            return False
        a, b = sub(x), sub(y)
        if len(a) != len(b):
            return False
        if not all(map(is_, a, b)):  # their differing sub-nodes go on (x and y are checked)
            if deeper is None:
                deeper = []
            deeper.extend(pair for pair in zip(a, b) if pair[0] is not pair[1])
    return deeper is None or _same_deep(deeper)


def _same_deep(pairs: list[tuple[Any, Any]]) -> bool:
    """Whether the node pairs `pairs` are equal: compared with an explicit stack, each pair once
    (copies of a shared graph would otherwise be compared path by path), cached hashes that
    differ telling unequal nodes apart at once."""
    stack = pairs
    seen: set[tuple[int, int]] = set()
    while stack:
        x, y = stack.pop()
        kind = type(x)
        if kind is not type(y):
            return False
        hx, hy = x._hash, y._hash
        if hx is not None and hy is not None and hx != hy:
            return False
        sub = kind._sub_nodes
        if sub is None:  # a leaf: its own fields
            if x != y:
                return False
            continue
        key = (id(x), id(y))
        if key in seen:
            continue
        seen.add(key)
        scalars = kind._scalars
        if scalars is not None and scalars(x) != scalars(y):
            return False
        xs, ys = sub(x), sub(y)
        if len(xs) != len(ys):
            return False
        stack.extend(pair for pair in zip(xs, ys) if pair[0] is not pair[1])
    return True
