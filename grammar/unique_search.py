"""The bounded search behind `Regions.fresh`: a completion of a unique array whose items are all new.

The region analysis (`unique_regions`) decides one unique array at a time; where it cannot, a
depth-first search looks for a way to close the array.  The witness must keep *every* unique
array it passes new too: those nested in the item in progress (open now: `Nested`, with their
items so far) and those the completion opens.  A witness that kept only the outer array's items
new could close an inner array on a duplicate (items ``^[ab]?$``, ``maxItems`` 2: after
``[["","a"],["","b"],["",`` only ``["",""]`` is a new outer item), and the matcher would reach a
dead end; so one search answers for the array and every level below it at once.  The search gives
up after `SEARCH_STEPS` moves and then answers no, which masks a token rather than risk a dead end.
`edge` is the scanner step both see (relative to the array, memoised).
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterator, Optional, Protocol

from formwork.grammar.unique_scan import SPACE, Event, State, step, value_key



class RegionMoves(Protocol):
    """What the search reads of `unique_regions.Regions` (not imported: it imports this module):
    its tagged moves, `moves.moves(state)` -> (byte, next state, unique flags)."""

    moves: Any

SEARCH_STEPS = 4_000
LOOP_VISITS = 3  # times a search path may pass one node within an item
EXIT = ("exit",)  # the node past the array's close
_KINDS = {"s": "start", "e": "end", "x": "after", "c": "exit"}  # scanner events of frame 0
#: `edge` flag: the byte starts or ends an item of a unique array nested in the item (a cycle
#: through it adds items that must differ: no inexhaustible cycle where those items are bounded)
NESTED_ITEM = 8
#: the unique arrays open inside the item in progress: (frame index relative to the searched
#: array, text of their item in progress or None, value keys of their items so far) each
Nested = tuple[tuple[int, Optional[bytes], frozenset], ...]


@lru_cache(maxsize=1 << 16)
def edge(state: State, b: int, unique: bool) -> tuple[State, tuple[str, ...], int, tuple[Event, ...], int]:
    """Scanner step relative to the array (frame 0): (next state, boundary kinds of the array,
    flags, the events in frames nested in it, the frame of the unique array it opens or -1)."""
    after, events, flags = step(state, b, unique)
    kinds = tuple(_KINDS[kind] for kind, index in events if index == 0)
    if not kinds and state[0] == "V" and len(state[1]) == 1 and b == 0x2C:
        kinds = ("comma",)
    if flags & SPACE and len(state[1]) == 1:
        flags = 0  # space around the items is no part of a value
    nested = tuple(event for event in events if event[1] > 0)
    if any(kind != "c" and state[1][index][0] == "A" for kind, index in nested):
        flags |= NESTED_ITEM
    return after, kinds, flags, nested, (len(after[1]) - 1 if unique else -1)


def _moves(regions: RegionMoves, node: Any) -> Iterator[tuple[int, Any, tuple[str, ...], tuple[Event, ...], int]]:
    """(byte, next node or EXIT, boundary kinds of the array, nested events, opened frame)."""
    t, state = node
    for b, nt, unique in regions.moves.moves(t):
        after, kinds, _, events, opened = edge(state, b, unique)
        yield b, (EXIT if "exit" in kinds else (nt, after)), kinds, events, opened


def search(regions: RegionMoves, node: Any, prefix: Optional[bytes], seen: tuple[str, ...],
           nested: Nested = ()) -> bool:
    """Depth first, at most SEARCH_STEPS moves: a way to close the array from `node` with every
    item new, in it and in every unique array nested in its items (paths visit a node at most
    `LOOP_VISITS` times between two item ends: a loop's later rounds spell other values, as
    another digit after `0.1` does when 0.1 is taken)."""
    budget = SEARCH_STEPS
    stack = [(_moves(regions, node), prefix, frozenset(seen), nested, {node: 1})]
    while stack:
        moves, text, keys, inner, visited = stack[-1]
        for b, nxt, kinds, events, opened in moves:
            budget -= 1
            if budget <= 0:
                return False
            got = follow(text, keys, b, kinds)
            if got is None:
                continue
            new_text, new_keys, ended = got
            got_inner = follow_nested(inner, b, events, opened)
            if got_inner is None:
                continue
            new_inner, inner_ended = got_inner
            if nxt is EXIT:
                return True
            ended = ended or inner_ended
            if visited.get(nxt, 0) >= LOOP_VISITS and not ended:
                continue
            stack.append((_moves(regions, nxt), new_text, new_keys, new_inner,
                          {nxt: 1} if ended else {**visited, nxt: visited.get(nxt, 0) + 1}))
            break
        else:
            stack.pop()
    return False


def follow(text: Optional[bytes], keys: frozenset, b: int, kinds: tuple[str, ...]
           ) -> Optional[tuple[Optional[bytes], frozenset, bool]]:
    """(item text, keys seen, whether an item ended) after byte `b`, or None for a duplicate."""
    ended = False
    for kind in kinds:
        if kind == "start":
            text = bytes([b])
        elif kind in ("end", "after"):
            key = _key(text, b, kind == "end")
            if key in keys:
                return None
            keys = keys | {key}
            text, ended = None, True
    if text is not None and not kinds:
        text += bytes([b])
    return text, keys, ended


def follow_nested(levels: Nested, b: int, events: tuple[Event, ...], opened: int
                  ) -> Optional[tuple[Nested, bool]]:
    """The nested unique arrays after byte `b` (its `events`; `opened`: the frame of the unique
    array it opens, or -1) and whether an item of one ended; None if one ends a duplicate."""
    ended = False
    out = []
    for index, text, keys in levels:
        mine = [kind for kind, at in events if at == index]
        closed = False
        for kind in mine:
            if kind == "s":
                text = bytes([b])
            elif kind in ("e", "x"):
                key = _key(text, b, kind == "e")
                if key in keys:
                    return None
                keys = keys | {key}
                text, ended = None, True
            else:  # "c": the array closes
                closed = True
        if closed:
            continue
        if text is not None and not mine:
            text += bytes([b])
        out.append((index, text, keys))
    if opened >= 0:
        out.append((opened, None, frozenset()))
    return tuple(out), ended


def _key(text: Optional[bytes], b: int, with_byte: bool) -> str:
    """The value key of the item spelled `text` (and `b`, when the item ends with it)."""
    assert text is not None
    return value_key(json.loads(text + bytes([b]) if with_byte else text))
