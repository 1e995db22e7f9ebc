"""Where tokens go after a terminal ends part way through them, independent of the parser.

From the trie nodes right after a terminal may end (an `Exits`), a token continues inside the
next terminal t2 — the walk over t2's own DFA from its start state — and, where t2 may end in
turn, into the terminal after it.  Which terminals may come next is the parser's business; the
walk inside t2 is not.  So the walk is a `Continuation` cached on the exits it starts from, per
next terminal (by the state key of its start, which names its language): every Earley set,
configuration, grammar and compilation that reaches the same exits and next terminal reuses it,
and the per-mask work at a terminal boundary is a few dictionary lookups per expected terminal
plus memoised parser scans.
"""
from __future__ import annotations

import threading

import numpy as np

from formwork.grammar.trie_walks import Exits, Nodes, _children, interned_exits, tokens_at, walk_below
from formwork.grammar.dfa import START

_LOCK = threading.Lock()


class Continuation:
    """The tokens through some exits that end inside the next terminal, and where it may end."""

    __slots__ = ("tokens", "exits")

    def __init__(self, tokens: np.ndarray, exits: Exits):
        self.tokens = tokens
        self.exits = exits


def continuation(source: Exits, dfa, deadline: float | None) -> Continuation:
    """The `Continuation` of `source` into the terminal with DFA `dfa`, computed on first use
    (cached on `source` under the state key of the terminal's start: the name of its language)."""
    key = dfa.state_key(START)
    got = source.next.get(key)
    if got is not None:
        return got
    trie = source.trie
    dfa.ensure_one(START)
    row = dfa.flat256()[START * 256:(START + 1) * 256]
    levels = walk_below(trie, dfa, source.seeds(row), deadline)
    ends: list[Nodes] = []
    accepting = dfa.accepting
    for depth, nodes, states in levels:
        done = nodes[accepting[states >> 8]]
        if len(done) and depth + 1 < trie.max_depth:
            children, _ = _children(trie, depth, done)
            if len(children):
                ends.append((depth + 1, children))
    got = Continuation(tokens_at(trie, levels), interned_exits(trie, ends))
    with _LOCK:
        return source.next.setdefault(key, got)
