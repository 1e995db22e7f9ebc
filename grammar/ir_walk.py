"""Rebuilding IR with its rule references replaced, and ordering rules so that each is rebuilt
after the rules it refers to: walks with explicit stacks, since lowered IR (and chains of
`$ref`s) nest past Python's stack limit."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from formwork.grammar.budget import CompileBudget
from formwork.grammar.ir import Node, RuleRef, children, map_children
from formwork.grammar.shared_nodes import is_shared, share

T = TypeVar("T")


def bottom_up(root: Node, visit: Callable[[Node], T], memo: dict[int, T],
              keep: Callable[[Node], bool] | None = None) -> T:
    """`visit(n)` for `root` and every node below it, each once and after its children (whose
    results it reads from `memo`, keyed by id), without recursion; a node for which `keep` says
    so is its own result, its children not visited."""
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        if keep is not None and keep(node):
            stack.pop()
            memo[id(node)] = node  # type: ignore[assignment]
            continue
        pending = [child for child in children(node) if id(child) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        memo[id(node)] = visit(node)
    return memo[id(root)]


def replace_refs(root: Node, replace: Callable[[RuleRef], Node], done: dict[int, Node],
                 keep: Callable[[Node], bool] | None = None) -> Node:
    """`root` with each rule reference swapped for `replace(ref)`, every node rebuilt once, after
    its children (`done`: id -> result, shared by calls over the same live IR).  A node with no
    replaced reference below (or for which `keep` says so) is kept as it is, not an equal copy
    (equal copies compare slowly); a shared mark (`shared_nodes`) is marked again (rebuilt by
    `map_children`, the mark `repeat(x, 1, 1)` would be plain x, and every path would build its
    own copy)."""
    def rebuild(node: Node) -> Node:
        if isinstance(node, RuleRef):
            return replace(node)
        if all(done[id(child)] is child for child in children(node)):
            return node
        if is_shared(node):
            return share(done[id(node.item)])
        return map_children(node, lambda child: done[id(child)])

    return bottom_up(root, rebuild, done, keep)


def dependency_order(starts: Iterable[str], targets: Callable[[str], Iterable[str]],
                     on_cycle: Callable[[list[str]], Exception] | None = None) -> list[str]:
    """The names reachable from `starts` (through `targets(name)`), each after every name it
    reaches (a depth-first post-order).  A cycle raises `on_cycle(path)` (the names around it,
    the first one again at the end); without `on_cycle`, a name met again on the path is skipped."""
    order: list[str] = []
    placed: set[str] = set()
    on_path: dict[str, int] = {}  # name -> its index on `path`
    path: list[str] = []
    for start in starts:
        if start in placed:
            continue
        stack: list[tuple[str, Iterable[str] | None]] = [(start, None)]
        while stack:
            name, pending = stack[-1]
            if pending is None:
                on_path[name] = len(path)
                path.append(name)
                pending = iter(list(targets(name)))
                stack[-1] = (name, pending)
            step = next(pending, None)  # type: ignore[call-overload]
            if step is None:
                stack.pop()
                path.pop()
                del on_path[name]
                placed.add(name)
                order.append(name)
            elif step in on_path:
                if on_cycle is not None:
                    raise on_cycle(path[on_path[step]:] + [step])
            elif step not in placed:
                stack.append((step, None))
    return order


class References:
    """The rule names each IR node refers to, memoised by node identity (each shared subtree is
    walked once), iteratively (no recursion limit on deep trees), ticking `budget` as it goes."""

    def __init__(self, budget: CompileBudget | None = None):
        self._memo: dict[int, tuple[Node, frozenset[str]]] = {}  # id -> (node kept alive, names)
        self._tick = budget.tick if budget is not None else no_tick

    def __call__(self, node: Node) -> frozenset[str]:
        memo = self._memo
        got = memo.get(id(node))
        if got is not None:
            return got[1]
        stack: list[tuple[Node, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in memo:
                continue
            if isinstance(n, RuleRef):
                memo[id(n)] = (n, frozenset((n.name,)))
                continue
            if not expanded:
                self._tick("finding rule references")
                stack.append((n, True))
                stack.extend((k, False) for k in children(n) if id(k) not in memo)
                continue
            memo[id(n)] = (n, _union(memo[id(k)][1] for k in children(n)))
        return memo[id(node)][1]


def _union(parts: Iterable[frozenset[str]]) -> frozenset[str]:
    """The union of `parts`, reusing a part when it is the only non-empty one."""
    first: frozenset[str] = _NO_NAMES
    acc: set[str] | None = None
    for part in parts:
        if not part or part is first:
            continue
        if not first:
            first = part
        else:
            acc = set(first) if acc is None else acc
            acc |= part
    return first if acc is None else frozenset(acc)


_NO_NAMES: frozenset[str] = frozenset()


def no_tick(what: str) -> None:
    """`CompileBudget.tick` where there is no budget."""
