"""How many distinct values an item of a unique array can still take, where its language is finite.

`unique_regions` calls a node good when the array can close with every item passing an
*inexhaustible* cycle.  Items of a bounded language (``maxLength``, a few bounded members) pass
none, yet they often have more completions than any array has items.  Here a node inside an item
gets, per *landing* (the node the item ends at, as the region's product sees it), a lower bound
on the number of distinct values its completions spell: the paths over *injective* moves only,
where distinct byte paths spell distinct values after any fixed prefix — no whitespace, no second
spelling (`unique_scan.SPELLING`: fractions, exponents, member order), no escape (``\\/`` and
``\\u002f`` are one character), not ``-0`` (equal to ``0``), no nested unique array (its items
are constrained further).  A node with at least `capacity` such completions landing at one place
can end its item as a new value at that landing whenever at most `capacity` values must differ:
each of them avoids the others' values, and the rest of the path is unchanged.

Counts are capped at the capacity; a move back into a node still on the depth-first path (a
cycle of injective moves, which would spell infinitely many values) is dropped, so every count is
a lower bound.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from formwork.grammar.unique_scan import BYTE_CLASS, SPACE, SPELLING, TAG

#: distinct values an item must be able to take for its node to count as good (`Regions`)
CAPACITY = 1 << 24
_NOT_INJECTIVE = SPELLING | SPACE
_ENDS = ("end", "after")
Edge = tuple[int, Any, tuple[str, ...], int]  # (byte, next node or exit, boundary kinds, flags)


def multiplicities(class_of_byte: np.ndarray) -> list[int]:
    """Per byte, how many bytes other than `TAG` share its automaton byte class and its scanner
    byte class (`unique_scan.BYTE_CLASS`): the bytes one classed move stands for."""
    keys = [(int(class_of_byte[b]), BYTE_CLASS[b]) for b in range(256)]
    sizes: dict[tuple[int, int], int] = {}
    for b, key in enumerate(keys):
        if b != TAG:
            sizes[key] = sizes.get(key, 0) + 1
    return [sizes.get(key, 0) for key in keys]


def countable(node: Any) -> bool:
    """Whether `node` lies inside an item, outside escapes and nested unique arrays."""
    mode, frames, _ = node[1]
    if mode == "V" and len(frames) == 1:
        return False  # between items
    return mode not in ("E", "U") and not any(frame[0] == "A" for frame in frames[1:])


def _injective(node: Any, b: int, flags: int) -> bool:
    mode, _, aux = node[1]
    if flags & _NOT_INJECTIVE:  # (a backslash leads into an escape: not countable)
        return False
    return not (mode == "N" and aux[0] == "-" and b == 0x30)


def capacity_jumps(nodes: Iterable[Any], edges: Callable[[Any], Iterator[Edge]], mult: list[int],
                   land: Callable[[tuple[str, ...], Any], Any], capacity: int) -> list[tuple[Any, Any]]:
    """(node, landing) for each node among `nodes` (countable, not on an inexhaustible cycle)
    whose completions spell at least `capacity` distinct values ending the item at `landing`
    (`land(kinds, next node)`: the product state an ending move leads to, or None)."""
    node_set = set(nodes)

    def moves(node: Any) -> tuple[set, list[tuple[Any, int]]]:
        landings, inner = set(), []
        for b, nxt, kinds, flags in edges(node):
            if any(kind in _ENDS for kind in kinds):
                landing = land(kinds, nxt)
                if landing is not None:
                    landings.add(landing)
            elif not kinds and nxt in node_set and _injective(node, b, flags):
                inner.append((nxt, mult[b]))
        return landings, inner

    counts: dict[Any, dict[Any, int]] = {}
    for root in node_set:
        if root in counts:
            continue
        landings, inner = moves(root)
        stack = [(root, iter(inner), dict.fromkeys(landings, 1), 1)]
        on_path = {root}
        while stack:
            node, todo, acc, weight = stack[-1]
            for nxt, times in todo:
                if nxt in counts:
                    _add(acc, counts[nxt], times, capacity)
                elif nxt not in on_path:  # else a cycle: dropped, the count stays a lower bound
                    landings, inner = moves(nxt)
                    stack.append((nxt, iter(inner), dict.fromkeys(landings, 1), times))
                    on_path.add(nxt)
                    break
            else:
                stack.pop()
                on_path.discard(node)
                counts[node] = acc
                if stack:
                    _add(stack[-1][2], acc, weight, capacity)
    return [(node, landing) for node, acc in counts.items() for landing, n in acc.items() if n >= capacity]


def _add(into: dict[Any, int], counts: dict[Any, int], times: int, capacity: int) -> None:
    for landing, n in counts.items():
        into[landing] = min(capacity, into.get(landing, 0) + times * n)


def within(moves: dict[Any, list[tuple[Any, int]]], jumps: list[tuple[Any, Any]], exit_state: Any,
           limit: int) -> set:
    """The product states (`Regions._product`: state -> [(next state, 1 if the move ends an
    item)]) from which `exit_state` is reached, with the `jumps` (node, landing) taken from
    (node, no hot node passed) as moves that end an item, ending at most `limit` items."""
    reverse: dict[Any, list[tuple[Any, int]]] = {}
    for src, targets in moves.items():
        for dst, cost in targets:
            reverse.setdefault(dst, []).append((src, cost))
    for node, landing in jumps:
        reverse.setdefault(landing, []).append(((node, False), 1))
    dist = {exit_state: 0}
    todo = deque([exit_state])
    while todo:  # 0-1 breadth first, backwards: fewest items ended on the way out
        here = todo.popleft()
        for src, cost in reverse.get(here, ()):
            got = dist[here] + cost
            if got < dist.get(src, limit + 1):
                dist[src] = got
                if cost:
                    todo.append(src)
                else:
                    todo.appendleft(src)
    return set(dist)
