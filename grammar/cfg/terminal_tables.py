"""Per-terminal-state tables for CFG masks, shared by every grammar and compilation.

For a terminal state the CFG mask needs the tokens that stay inside the terminal and the trie
nodes where the terminal may end before a token does (`Exits`).  Both come from one walk of the
vocabulary trie (`terminal_walk`) and are keyed by the state's *language*: the canonical form of
the part of the terminal's DFA reachable from it.  Lowering puts the same pieces (whitespace,
separators, string bodies) into many terminals, so their states share one table.

A state that admits every token of the JSON-string slice (`grammar.slices`) and that no slice
token can finish takes its inside mask from the token-mask cache (which walks only the tokens
outside the slice) and its exits from the trie of the tokens outside the slice.
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from formwork.grammar.cfg.trie_walks import Exits, Nodes, terminal_walk
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.token_mask import pack_token_ids
from formwork.grammar.token_trie import TokenTrie

if TYPE_CHECKING:
    from formwork.grammar.slices import TokenSlice
    from formwork.grammar.token_mask import TokenMaskCache

_MAX_SIGNATURE_STATES = 8  # larger reachable parts are keyed by the automaton's own state key
_GATHER_NODES = 20_000  # above this many live nodes, read tokens by one gather over all ids
_MAX_TABLES = 2048  # per vocabulary trie


class TerminalTable:
    """Inside mask (packed words, stop tokens excluded) and `Exits` of one terminal state."""

    def __init__(self, inside: np.ndarray, exits: Exits):
        inside.flags.writeable = False
        self.inside = inside
        self.exits = exits


def language_signature(dfa, state: int) -> tuple | None:
    """A hashable description of the language of `state`: the part of the DFA reachable from it,
    states numbered in breadth-first order (None when that part is large)."""
    order = [state]
    index = {state: 0}
    i = 0
    while i < len(order):
        for target in np.unique(dfa.row(order[i])).tolist():
            if target != DEAD and target not in index:
                if len(order) == _MAX_SIGNATURE_STATES:
                    return None
                index[target] = len(order)
                order.append(target)
        i += 1
    renumber = np.full(dfa.num_states, -1, dtype=np.int32)
    renumber[order] = np.arange(len(order), dtype=np.int32)
    rows = np.stack([dfa.row(q) for q in order])
    return (bytes(dfa.accepting[order].astype(np.uint8)), renumber[rows].tobytes())


def language_key(dfa, state: int) -> tuple:
    """A grammar-independent cache key naming the language of `state`."""
    signature = language_signature(dfa, state)
    return ("language", signature) if signature is not None else ("state", dfa.state_key(state))


def slice_never_ends(token_slice: "TokenSlice", dfa, state: int) -> bool:
    """True when no token of the slice can finish the terminal at or after one of its prefixes:
    breadth-first over (slice state, terminal state) pairs up to the slice's longest token."""
    if dfa.accepting[state]:
        return False
    table = token_slice.dfa.table
    frontier = {(START, state)}
    seen = set(frontier)
    for _ in range(token_slice.max_len):
        nxt = set()
        for u, q in frontier:
            slice_row, row = table[u], dfa.row(q)
            ok = (slice_row != DEAD) & (row != DEAD)
            for pair in set(zip(slice_row[ok].tolist(), row[ok].tolist())):
                if pair not in seen:
                    seen.add(pair)
                    nxt.add(pair)
        if dfa.accepting[[q for _, q in nxt]].any() if nxt else False:
            return False
        if not nxt:
            return True
        frontier = nxt
    return True


def _build(cache: "TokenMaskCache", dfa, state: int, deadline: float | None) -> TerminalTable:
    vocab = cache.vocab
    trie = vocab.trie
    token_slice = cache._slice if cache.use_slices else None  # the cache's slice tables (built by prepare())
    if token_slice is not None and token_slice.covers(dfa, state) and slice_never_ends(token_slice, dfa, state):
        remaining = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        inside = cache.mask(dfa, state, remaining).copy()
        rest = token_slice.rest_trie
        _, exits = terminal_walk(rest, dfa, state, deadline)
        return TerminalTable(inside, Exits(rest, exits))
    live, exits = terminal_walk(trie, dfa, state, deadline)
    count = sum(len(n) for _, n in live)
    if count > _GATHER_NODES:
        flags = np.zeros(trie.num_nodes + 1, dtype=bool)
        for d, n in live:
            flags[n + trie.level_offset[d]] = True
        ids = np.flatnonzero(flags[trie.token_node])
    else:
        ids = _tokens_ending_at(trie, live)
    return TerminalTable(pack_token_ids(ids, vocab.vocab_size), Exits(trie, exits))


def _tokens_ending_at(trie: TokenTrie, live: list[Nodes]) -> np.ndarray:
    if not live:
        return np.zeros(0, dtype=np.int64)
    nodes = np.concatenate([n + trie.level_offset[d] for d, n in live])
    lo, hi = trie.end_ptr[nodes], trie.end_ptr[nodes + 1]
    sizes = hi - lo
    return trie.end_tokens[np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))]


_TABLES: "weakref.WeakKeyDictionary[TokenTrie, OrderedDict]" = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def terminal_table(cache: "TokenMaskCache", dfa, state: int, deadline: float | None = None) -> TerminalTable:
    """The shared `TerminalTable` of a terminal state (built on first use, LRU per vocabulary)."""
    key = language_key(dfa, state)
    trie = cache.vocab.trie
    with _TABLES_LOCK:
        tables = _TABLES.setdefault(trie, OrderedDict())
        got = tables.get(key)
        if got is not None:
            tables.move_to_end(key)
            return got
    got = _build(cache, dfa, state, deadline)
    with _TABLES_LOCK:
        tables[key] = got
        if len(tables) > _MAX_TABLES:
            tables.popitem(last=False)
    return got
