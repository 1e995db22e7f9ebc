"""Per-terminal-state tables for CFG masks, shared by every grammar and compilation.

For a terminal state the CFG mask needs the tokens that stay inside the terminal and the trie
nodes where the terminal may end before a token does (`Exits`).  Both come from one walk of the
vocabulary trie (`native_walk.walk_state`) and are keyed by the state's *language*: for a small reachable
part, its minimal DFA in a canonical numbering (so the states of `[a-z]+` after one letter and
after two, distinct in a lazily built DFA, share one table); else the automaton's state key.

A state that admits every token of the JSON-string slice (`grammar.slices`) and that no slice
token can finish (a string body) walks only the trie of the tokens outside the slice: the slice's
mask is all inside, and none of its tokens is an exit.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from formwork.grammar._minimize import minimize as _minimize
from formwork.grammar._packed import nonzero_words, or_words
from formwork.grammar._reach import byte_runs as _byte_runs, reach as _reach, reaches_accepting as _reaches_accepting
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.native_walk import walk_state
from formwork.grammar.terminal_exits import Exits, interned_exits
from formwork.grammar.trie_memo import TrieMemo

if TYPE_CHECKING:
    from formwork.grammar.slices import TokenSlice
    from formwork.grammar.token_mask import TokenMaskCache

_MAX_TABLES = 2048  # per vocabulary trie
_MAX_SIGNATURE_STATES = 32  # larger reachable parts are keyed by the automaton's own state key


class TerminalTable:
    """Inside mask (packed words, stop tokens excluded) and `Exits` of one terminal state; a sparse
    inside mask (most are: a literal's few prefixes) is also kept as its nonzero words."""

    def __init__(self, inside: np.ndarray, exits: Exits):
        inside.flags.writeable = False
        self.inside = inside
        self.exits = exits
        at, bits = nonzero_words(inside)
        sparse = len(at) <= len(inside) // (8 * 8)  # an OR of the words costs less than one of the mask
        self.nonzero = (np.frombuffer(at, dtype=np.int64), np.frombuffer(bits, dtype=np.int32)) if sparse else None

    def add_to(self, words: np.ndarray) -> None:
        """OR the inside tokens into packed mask `words` (writable)."""
        if self.nonzero is None:
            words |= self.inside
        else:
            or_words(words, *self.nonzero)


def reachable_part(dfa, state: int) -> tuple[bytes, bytes] | None:
    """(int32 table bytes, states x the DFA's classes; uint8 accepting bytes) of the part of the DFA
    reachable from `state`, numbered from 0 (`state`) with the dead state last (`_reach`, in C,
    building missing rows in place); None when it has more than `_MAX_SIGNATURE_STATES` states."""
    return _on_rows(dfa, lambda rows, _, expanded, accepting, core: _reach(
        rows, rows.shape[1], expanded, accepting, core, state, _MAX_SIGNATURE_STATES))


def language_signature(dfa, state: int) -> bytes | None:
    """A hashable name of the language of `state` (None when the part of the DFA reachable from
    it is large): that part minimised and numbered canonically (`_minimize`), spelled out over
    byte runs (`_reach.byte_runs`: where a byte moves some state unlike the byte before it), so
    equal languages get equal signatures whatever their byte classes.  Three native calls."""
    part = reachable_part(dfa, state)
    if part is None:
        return None
    return _byte_runs(*_minimize(*part, 0), dfa.walk_tables()[1])


def language_key(dfa, state: int) -> tuple:
    """A grammar-independent cache key naming the language of `state`."""
    signature = language_signature(dfa, state)
    return ("language", signature) if signature is not None else ("state", dfa.state_key(state))


def slice_never_ends(token_slice: "TokenSlice", dfa, state: int) -> bool:
    """True when no token of the slice can finish the terminal at or after one of its prefixes:
    at once when no accepting state is reachable over the bytes slice tokens hold at all, else
    breadth-first over (slice state, terminal state) pairs up to the slice's longest token, a
    level at a time (pairs coded as slice state << 32 | terminal state)."""
    if dfa.accepting[state]:
        return False
    table = token_slice.dfa.table
    if not _accepts_over(dfa, state, (table != DEAD).any(axis=0)):
        return True
    frontier = np.array([START << 32 | state], dtype=np.int64)
    seen = set(frontier.tolist())
    for _ in range(token_slice.max_len):
        states = frontier & 0xFFFFFFFF
        dfa.ensure(states)
        class_of_byte, rows = dfa.byte_classes()
        slice_next = table[frontier >> 32]
        next_state = rows[states].take(class_of_byte, axis=1)
        ok = (slice_next != DEAD) & (next_state != DEAD)
        codes = set((slice_next[ok].astype(np.int64) << 32 | next_state[ok]).tolist())
        codes.difference_update(seen)
        if not codes:
            return True
        seen.update(codes)
        frontier = np.fromiter(codes, dtype=np.int64, count=len(codes))
        if dfa.accepting[frontier & 0xFFFFFFFF].any():
            return False
    return True


def _accepts_over(dfa, state: int, bytes_held: np.ndarray) -> bool:
    """True when some accepting state is reachable from `state` in one step or more over the
    bytes flagged in `bytes_held` (256 flags), in any order and number (`_reaches_accepting`,
    in C, building missing rows in place)."""
    def call(rows, class_of_byte, expanded, accepting, core):
        classes = np.zeros(rows.shape[1], dtype=np.uint8)
        classes[class_of_byte[bytes_held]] = 1
        return _reaches_accepting(rows, rows.shape[1], expanded, accepting, core, state, classes)

    return _on_rows(dfa, call)


def _on_rows(dfa, call):
    """`call(*dfa.walk_tables())` (a native search in `_reach`, which builds missing rows in
    place), again while it answers an int: a state past the arrays, which have grown since."""
    while True:
        rows, class_of_byte, expanded, accepting, core = dfa.walk_tables()
        got = call(rows, class_of_byte, expanded, accepting, core)
        if core is not None:
            dfa.record_new()
        if type(got) is not int:  # a bool or a result, not a state
            return got


def _build(cache: "TokenMaskCache", dfa, state: int, deadline: float | None) -> TerminalTable:
    vocab = cache.vocab
    token_slice = cache.token_slice if cache.use_slices else None  # the cache's slice tables (built by prepare())
    inside = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    if token_slice is not None and token_slice.covers(dfa, state) and slice_never_ends(token_slice, dfa, state):
        rest = token_slice.rest_trie  # every slice token stays inside: walk only the others
        exits = walk_state(rest, dfa, state, inside, deadline, want_exits=True)
        inside |= token_slice.mask_words
        return TerminalTable(inside, interned_exits(rest, exits))
    exits = walk_state(vocab.trie, dfa, state, inside, deadline, want_exits=True)
    return TerminalTable(inside, interned_exits(vocab.trie, exits))


_TABLES: "TrieMemo[TerminalTable]" = TrieMemo(_MAX_TABLES)


def terminal_table(cache: "TokenMaskCache", dfa, state: int, deadline: float | None = None) -> TerminalTable:
    """The shared `TerminalTable` of a terminal state (built on first use, LRU per vocabulary).  Its
    exits are all of them, whatever may follow the terminal: terminals that end alike share them,
    and with them their continuations."""
    return _TABLES.get(cache.vocab.trie, language_key(dfa, state), lambda: _build(cache, dfa, state, deadline))
