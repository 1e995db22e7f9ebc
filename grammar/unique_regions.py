"""Whether the item of a unique array in progress can still end as a new value (`uniqueItems`).

The matcher walks a *tagged* automaton: the language of the schema without uniqueness, where the
`[` of each array whose items must be distinct is preceded by the byte `TAG` (never in a token).
A *node* is (automaton state, scanner state relative to one unique array: its frame first, then
the containers open inside the current item).  The nodes reachable from a node before the array
closes form its *region*; an edge there may start, end or separate items (boundary edges).

A node is *good* when the array can be closed from it with every item it still ends new, whatever
the items before: the region reaches the array's close such that each item on the way passes an
*inexhaustible* part — a cycle (crossing no item boundary, the array's or a nested unique array's)
through a byte that changes the value (`unique_scan.CHANGES`); going round it n times spells n
different values, so one of them is new — or, for an item of a bounded language, passes a node
with `unique_capacity.CAPACITY` distinct completions, enough while at most half as many items were
seen (`items_limit`).  A node that is not good is decided exactly by a bounded depth-first search
for a completion whose items are all new (`fresh`; `unique_search`, which keeps the unique arrays
nested in the items new too).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from formwork.grammar.dfa import DEAD
from formwork.grammar.unique_capacity import CAPACITY, capacity_jumps, countable, multiplicities, within
from formwork.grammar.unique_open import OPEN_TAG, OPEN_VALUES
from formwork.grammar.unique_scan import BYTE_CLASS, CHANGES, SPACE, SPELLING, TAG, State
from formwork.grammar.unique_search import EXIT as _EXIT, NESTED_ITEM, Nested, edge as scan_edge, search

MAX_REGION = 50_000  # nodes of one region analysed; past it every node of the region is "not good"
# the order the search tries bytes in: closers first (short completions), separators last
_ORDER = sorted(range(256), key=lambda b: (b not in b"]}\"", b in b",", b in b" \t\n\r", b))
_ORDER_ARRAY = np.array([b for b in _ORDER if b not in (TAG, OPEN_TAG)], dtype=np.intp)
_PLAIN = (0,) * 256
_TAGS = ((TAG, 1), (OPEN_TAG, OPEN_VALUES))  # the tag bytes, and the flag of the `[` each comes before

Node = tuple[int, State]


class TaggedMoves:
    """The live moves of each state of the tagged automaton: (byte, next state, opens a unique
    array: 0 no, 1 yes, `unique_open.OPEN_VALUES` one of open values), each tag followed through
    where a `[` needs it."""

    def __init__(self, dfa: Any):
        self.dfa = dfa
        self._moves: dict[int, list[tuple[int, int, int]]] = {}
        self._classed: dict[int, list[tuple[int, int, int]]] = {}
        self._tables: dict[int, dict[int, tuple[tuple[int, int], ...]]] = {}
        class_of_byte = np.asarray(dfa.byte_classes()[0])
        firsts: dict[tuple[int, int], int] = {}  # (automaton's byte class, scanner's) -> a byte
        for b in _ORDER_ARRAY.tolist():
            firsts.setdefault((int(class_of_byte[b]), BYTE_CLASS[b]), b)
        self._reps = np.array(list(firsts.values()), dtype=np.intp)
        self._rep_classes = class_of_byte[self._reps]
        self._tag_classes = tuple((int(class_of_byte[tag]), flag) for tag, flag in _TAGS)
        self._open_class = int(class_of_byte[0x5B])

    def moves(self, t: int) -> list[tuple[int, int, int]]:
        got = self._moves.get(t)
        if got is None:
            row = self.dfa.row(t)
            ordered = row[_ORDER_ARRAY]
            live = ordered != DEAD
            got = list(zip(_ORDER_ARRAY[live].tolist(), ordered[live].tolist(), _PLAIN))
            for tag, flag in _TAGS:
                if row[tag] != DEAD:
                    after = self.dfa.row(row[tag])[0x5B]  # the tag comes right before the bracket
                    if after != DEAD:
                        got.append((0x5B, int(after), flag))
            self._moves[t] = got
        return got

    def classed(self, t: int) -> list[tuple[int, int, int]]:
        """`moves(t)` with one byte per (automaton byte class, scanner byte class): the moves
        that differ in what the region analysis sees (`unique_scan.BYTE_CLASS`)."""
        got = self._classed.get(t)
        if got is None:
            row = self.dfa.class_row(t)
            nexts = row[self._rep_classes]
            live = nexts != DEAD
            got = list(zip(self._reps[live].tolist(), nexts[live].tolist(), _PLAIN))
            for tag_class, flag in self._tag_classes:
                tagged = int(row[tag_class])
                if tagged != DEAD:
                    after = int(self.dfa.class_row(tagged)[self._open_class])
                    if after != DEAD:
                        got.append((0x5B, after, flag))
            self._classed[t] = got
        return got

    def nexts(self, t: int, b: int) -> tuple[tuple[int, int], ...]:
        """The moves on byte `b`: (next state, the unique array it opens as in `moves`) each;
        both a plain and a tagged one where a `[` here may open a unique array or another one."""
        table = self._tables.get(t)
        if table is None:
            table = self._tables[t] = {}
            for byte, nxt, unique in self.moves(t):
                table[byte] = table.get(byte, ()) + ((nxt, unique),)
        return table.get(b, ())


class Regions:
    """The analysis of the regions of one tagged automaton, memoised per node (shared by every
    matcher of a grammar)."""

    def __init__(self, moves: TaggedMoves, capacity: int = CAPACITY):
        self.moves = moves
        self.capacity = capacity
        self.items_limit = capacity // 2  # items seen, at most, for `good` to hold (`fresh`)
        self._mult: list[int] | None = None
        self._good: dict[tuple[Node, bool], bool] = {}
        self._unbounded: dict[tuple[Node, bool], bool] = {}  # good without `unique_capacity`
        self._all_good: dict[tuple[Node, bool], bool] = {}
        self._canonical: dict[Node, bool] = {}
        self._in_text: dict[Node, bool] = {}
        self._in_item: dict[Node, bool] = {}

    # ------------------------------------------------------------ graph
    def edges(self, node: Node, classed: bool = False) -> Iterator[tuple[int, Any, tuple[str, ...], int]]:
        """(byte, next node or _EXIT, boundary kinds, flags) of each live move of `node`;
        `classed`: one byte per move that differs in anything but the byte's value
        (`TaggedMoves.classed`), for the analyses that read only the nodes, kinds and flags."""
        t, state = node
        for b, nt, unique in (self.moves.classed(t) if classed else self.moves.moves(t)):
            after, kinds, flags, _, _ = scan_edge(state, b, unique)
            yield b, (_EXIT if "exit" in kinds else (nt, after)), kinds, flags

    def _analyse(self, root: Node) -> None:
        """Explore the region of `root` and record good / all good / canonical for its nodes."""
        succ: dict[Node, list[tuple[Any, tuple[str, ...], int]]] = {}
        raw: dict[Node, list] = {}  # the classed edges, for `unique_capacity`
        todo = [root]
        overflow = False
        while todo and not overflow:  # breadth first: each round's automaton rows built at once
            self.moves.dfa.ensure(sorted({t for t, _ in todo}))
            later = []
            for node in todo:
                if node in succ:
                    continue
                if len(succ) >= MAX_REGION:
                    overflow = True
                    break
                raw[node] = list(self.edges(node, True))
                out = {(nxt, kinds, flags) for _, nxt, kinds, flags in raw[node]}
                succ[node] = list(out)
                later.extend(nxt for nxt, _, _ in out if nxt is not _EXIT and nxt not in succ)
            todo = later
        if overflow:
            for node in succ:
                for bit in (False, True):
                    self._good.setdefault((node, bit), False)
                    self._unbounded.setdefault((node, bit), False)
                    self._all_good.setdefault((node, bit), False)
                self._canonical.setdefault(node, False)
            return
        self._product(succ, _hot_nodes(succ), raw)
        self._spellings(succ)

    def _product(self, succ: dict, hot: set, raw: dict) -> None:
        """good/all good over (node, the current item has passed a hot node: it can be new); an
        item of a bounded language may instead end from a node with `capacity` completions
        (`unique_capacity`), which holds while at most `items_limit` items were seen."""
        moves: dict[tuple, list[tuple]] = {}
        for node, out in succ.items():
            for bit in (False, True):
                here = bit or node in hot
                targets = []
                for nxt, kinds, _ in out:
                    got = _through(here, kinds, nxt, hot)
                    if got is not None:
                        targets.append((got, int("end" in kinds or "after" in kinds)))
                moves[(node, bit)] = targets
        reverse: dict[Any, list[tuple]] = {}
        for src, targets in moves.items():
            for dst, _ in targets:
                reverse.setdefault(dst, []).append(src)
        unbounded = _backward({_EXIT}, reverse)
        good = unbounded
        if len(unbounded) <= len(moves):  # some state is not good: count the bounded items' values
            if self._mult is None:
                self._mult = multiplicities(np.asarray(self.moves.dfa.byte_classes()[0]))
            jumps = capacity_jumps([n for n in succ if n not in hot and countable(n)],
                                   raw.__getitem__, self._mult,
                                   lambda kinds, nxt: _through(True, kinds, nxt, hot), self.capacity)
            if jumps:
                good = unbounded | within(moves, jumps, _EXIT, self.items_limit)
        bad = [s for s in moves if s not in good]
        reaches_bad = _backward(set(bad), reverse)
        for s in moves:
            self._good[s] = s in good
            self._unbounded[s] = s in unbounded
            self._all_good[s] = s not in reaches_bad

    def _spellings(self, succ: dict) -> None:
        """canonical: no byte reachable within the current item offers a second spelling of one
        value (a fraction, an exponent, member order, space inside the item)."""
        reverse: dict[Node, list[Node]] = {}
        tainted: set[Node] = set()
        for node, out in succ.items():
            for nxt, kinds, flags in out:
                if flags & (SPELLING | SPACE):
                    tainted.add(node)
                if nxt is not _EXIT and "end" not in kinds:
                    reverse.setdefault(nxt, []).append(node)
        reached = _backward(tainted, reverse)
        for node in succ:
            self._canonical[node] = node not in reached

    # ------------------------------------------------------------ queries
    def _ensure(self, node: Node) -> None:
        if node not in self._canonical:
            self._analyse(node)

    def good(self, node: Node, new_item: bool) -> bool:
        """Whether the array can close from `node` with every item new, whatever the items seen
        (at most `items_limit` of them); `new_item`: no item is in progress (or its prefix is of
        no concern)."""
        self._ensure(node)
        return self._good[(node, new_item)]

    def all_good(self, node: Node, new_item: bool) -> bool:
        """Whether every node reachable from `node` in its region is good."""
        self._ensure(node)
        return self._all_good[(node, new_item)]

    def good_in_text(self, node: Node) -> bool:
        """Whether `node` (inside a string of the item) and every node its string's characters
        reach (no quote, no backslash) is good with the item in progress: a token without a quote
        or backslash cannot be refused there."""
        return self._good_closure(
            node, self._in_text, lambda here: here[1][0] == "S" and self.good(here, False),
            lambda edge: edge[0] not in (0x22, 0x5C) and edge[1] is not _EXIT)

    def good_in_item(self, node: Node) -> bool:
        """Whether `node` (an item in progress) and every node it reaches by moves that neither
        end nor start an item (nor leave the array) are good with the item in progress: a token
        that holds no byte able to end the item (`unique_tracker._context_bits`) cannot be
        refused there."""
        return self._good_closure(node, self._in_item, lambda here: self.good(here, False),
                                  lambda edge: not edge[2])

    def _good_closure(self, node: Node, memo: dict[Node, bool], holds: Callable[[Node], bool],
                      follows: Callable[[tuple], bool]) -> bool:
        """Whether `holds` is true of `node` and of every node reached from it by the edges
        `follows` accepts; memoised in `memo` (for every node reached too when it holds: what
        one reaches, it reaches from each)."""
        got = memo.get(node)
        if got is None:
            seen = {node}
            todo = [node]
            got = True
            while todo and got:
                here = todo.pop()
                got = holds(here)
                for edge in self.edges(here, True):
                    nxt = edge[1]
                    if nxt not in seen and follows(edge):
                        seen.add(nxt)
                        todo.append(nxt)
            for inside in (seen if got else (node,)):
                memo[inside] = got
        return got

    def canonical(self, node: Node) -> bool:
        self._ensure(node)
        return self._canonical[node]

    def fresh(self, node: Node, prefix: bytes | None, seen: tuple[str, ...], nested: Nested = ()) -> bool:
        """Whether the array can close from `node` with every item new: the item in progress
        (spelled `prefix` so far; None: none) and every later one differing from `seen` and
        from each other (value keys, `value_key`), and so in the unique arrays open inside the
        item (`nested`) and any the completion opens (`unique_search`)."""
        return self.sure(node, prefix is None, len(seen)) or search(self, node, prefix, seen, nested)

    def sure(self, node: Node, new_item: bool, seen: int) -> bool:
        """`fresh` answered by the analysis alone (whatever the items, `seen` of them), without
        the search: False where the items and the prefix decide."""
        return self.good(node, new_item) and (seen <= self.items_limit or self._unbounded[(node, new_item)])


def _through(here: bool, kinds: tuple[str, ...], nxt: Any, hot: set) -> Any:
    """The product state an edge leads to from a node where the item has passed a hot node
    (`here`), or None if the edge would end an item that has not."""
    bit = here
    for kind in kinds:
        if kind in ("end", "after"):
            if not bit:
                return None
            bit = True
        elif kind == "start":
            bit = False
        elif kind == "exit":
            return _EXIT if bit else None
        else:  # a comma: no item in progress
            bit = True
    if nxt is _EXIT:
        return _EXIT
    return (nxt, bit or nxt in hot)


def _backward(sources: set, reverse: dict) -> set:
    seen = set(sources)
    todo = list(sources)
    while todo:
        for src in reverse.get(todo.pop(), ()):
            if src not in seen:
                seen.add(src)
                todo.append(src)
    return seen


def _hot_nodes(succ: dict) -> set:
    """The nodes on a cycle (inside one item) through a byte that changes the value: the strongly
    connected components of the edges that cross no item boundary, of the array or of a unique
    array nested in its item, with such an inner edge."""
    inner = {node: [nxt for nxt, kinds, flags in out if not kinds and not flags & NESTED_ITEM and nxt is not _EXIT]
             for node, out in succ.items()}
    component = _components(inner)
    hot_components = {component[node] for node, out in succ.items()
                      for nxt, kinds, flags in out
                      if not kinds and flags & CHANGES and nxt is not _EXIT
                      and component[nxt] == component[node]}
    return {n for n in succ if component[n] in hot_components}


def _components(graph: dict) -> dict:
    """Strongly connected components (iterative Tarjan): node -> component id."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    component: dict = {}
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component[member] = index[node]
                    if member == node:
                        break
    return component
