"""FIRST and FOLLOW sets over terminals, by propagation along the grammar's inclusion edges.

Sets are Python ints used as bitsets (bit t: terminal t).  Each production is read once to find
which sets include which (FIRST(lhs) includes FIRST(x) for every x of its rhs's nullable prefix;
FOLLOW(x) includes FOLLOW(lhs) when what comes after x in the rhs may be empty), then a worklist
carries the bits along those edges: linear in the grammar's size times the edges a set crosses,
where a round-robin fixpoint over the productions re-reads every suffix each round.
"""
from __future__ import annotations

from collections.abc import Sequence


def _propagate(sets: list[int], into: list[list[int]]) -> None:
    """Close `sets` under `sets[y] |= sets[x]` for every y in `into[x]` (in place)."""
    pending = [x for x in range(len(sets)) if sets[x] and into[x]]
    queued = set(pending)
    while pending:
        x = pending.pop()
        queued.discard(x)
        bits = sets[x]
        for y in into[x]:
            merged = sets[y] | bits
            if merged != sets[y]:
                sets[y] = merged
                if into[y] and y not in queued:
                    queued.add(y)
                    pending.append(y)


def first_sets(lhs: Sequence[int], rhs: Sequence[tuple[int, ...]], nullable: Sequence[bool],
               nullable_terminals: frozenset[int], num_nonterminals: int) -> list[int]:
    """FIRST of every nonterminal as a bitset of terminals (symbols >= 0 are nonterminals,
    symbols < 0 terminal ~symbol)."""
    first = [0] * num_nonterminals
    into: list[list[int]] = [[] for _ in range(num_nonterminals)]
    for head, body in zip(lhs, rhs):
        for x in body:
            if x >= 0:
                into[x].append(head)
                if not nullable[x]:
                    break
            else:
                first[head] |= 1 << ~x
                if ~x not in nullable_terminals:
                    break
    _propagate(first, into)
    return first


def terminal_follow(lhs: Sequence[int], rhs: Sequence[tuple[int, ...]], nullable: Sequence[bool],
                    nullable_terminals: frozenset[int], num_nonterminals: int,
                    num_terminals: int) -> list[frozenset[int]]:
    """For every terminal, the terminals that may come right after it in some sentential form
    (nullable terminals and nonterminals are seen through)."""
    first = first_sets(lhs, rhs, nullable, nullable_terminals, num_nonterminals)
    # nonterminals 0..n-1 and terminal t as node n + t share one propagation graph
    follow = [0] * (num_nonterminals + num_terminals)
    into: list[list[int]] = [[] for _ in follow]
    for head, body in zip(lhs, rhs):
        after, empty = 0, True  # FIRST of the suffix right of the position, and whether it may be empty
        for x in reversed(body):
            node = x if x >= 0 else num_nonterminals + ~x
            follow[node] |= after
            if empty:
                into[head].append(node)
            if x >= 0:
                after = first[x] | (after if nullable[x] else 0)
                empty = empty and nullable[x]
            else:
                skippable = ~x in nullable_terminals
                after = 1 << ~x | (after if skippable else 0)
                empty = empty and skippable
    _propagate(follow, into)
    return [frozenset(_bits(follow[num_nonterminals + t])) for t in range(num_terminals)]


def _bits(bits: int) -> list[int]:
    """The positions of the set bits of `bits`."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out
