"""Token masks of CFG configurations, split at terminal boundaries.

For a hypothesis (earley_set, terminal t, state s), a token is allowed when either
- it stays inside t: the terminal DFA's own cached mask (`TokenMaskCache`, shared by every
  configuration, grammar and compilation that reaches the same terminal state), or
- t may end after one of its proper prefixes and the rest is alive from the boundary
  configuration after the parser scans t.  The trie nodes where t may end are found once
  per terminal state; per hypothesis, only their children whose byte the boundary allows
  are walked further, over the configuration automaton.
A configuration's mask is the OR of its hypotheses' masks (a boundary hypothesis: of its
expected terminals from their start states), plus the stop tokens where the parse may end.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from formwork.grammar.dfa import START
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.token_mask import pack_token_ids
from formwork.grammar.token_trie import TokenTrie

if TYPE_CHECKING:
    from formwork.grammar.cfg.configs import ConfigDFA
    from formwork.grammar.token_mask import TokenMaskCache

Level = tuple[int, np.ndarray, np.ndarray]  # (depth, local node indices, states * 256)


def walk_below(trie: TokenTrie, dfa, depth: int, nodes: np.ndarray, states: np.ndarray,
               deadline: float | None) -> list[Level]:
    """Live descendants of live `nodes` at `depth` (with their automaton states * 256), level by level,
    the starting level included."""
    out: list[Level] = [(depth, nodes, states)]
    while len(nodes) and depth + 1 < trie.max_depth:
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        lo, hi = trie.child_lo[depth][nodes], trie.child_hi[depth][nodes]
        sizes = hi - lo
        total = int(sizes.sum())
        if not total:
            break
        children = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(total)
        if dfa.lazy:
            dfa.ensure(np.unique(states >> 8))
        nxt = dfa.flat256()[np.repeat(states, sizes) + trie.level_bytes[depth + 1][children]]
        keep = nxt != 0
        depth, nodes, states = depth + 1, children[keep], nxt[keep]
        if len(nodes):
            out.append((depth, nodes, states))
    return out


def tokens_at(trie: TokenTrie, levels: list[Level]) -> np.ndarray:
    """Ids of the tokens ending at the given nodes."""
    if not levels:
        return np.zeros(0, dtype=np.int64)
    live = np.concatenate([nodes + trie.level_offset[d] for d, nodes, _ in levels])
    lo, hi = trie.end_ptr[live], trie.end_ptr[live + 1]
    sizes = hi - lo
    return trie.end_tokens[np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))]


class Exits:
    """Where terminal t, from state s, may end before a token does: children of those trie nodes."""

    def __init__(self, trie: TokenTrie, dfa, state: int):
        self.levels: list[tuple[int, np.ndarray]] = []  # (depth of the children, child local indices)
        dfa.ensure_one(state)
        first = dfa.flat256()[state * 256 + trie.level_bytes[0]]
        live = np.flatnonzero(first)
        for depth, nodes, states in walk_below(trie, dfa, 0, live, first[live], None):
            if depth + 1 >= trie.max_depth:
                continue
            ends = nodes[dfa.accepting[states >> 8]]
            lo, hi = trie.child_lo[depth][ends], trie.child_hi[depth][ends]
            sizes = hi - lo
            total = int(sizes.sum())
            if total:
                children = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(total)
                self.levels.append((depth + 1, children))


class ConfigMasks:
    """Per-configuration masks of one CFG automaton (see the module docstring)."""

    def __init__(self, automaton: "ConfigDFA", max_entries: int = 4096):
        self.automaton = automaton
        self.builder = automaton.builder
        self.max_entries = max_entries
        self._exits: dict[tuple[int, int], Exits] = {}
        self._hyp: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def compute(self, cache: "TokenMaskCache", state: int, max_seconds: float | None) -> np.ndarray:
        automaton = self.automaton
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        b = self.builder
        words = np.zeros((cache.vocab.vocab_size + 31) // 32, dtype=np.int32)
        for sid, t, s in b.sets[state]:
            if t == -1:
                for t2 in b.parser.expected(sid):
                    words |= self.hypothesis(cache, sid, t2, START, deadline)
            else:
                words |= self.hypothesis(cache, sid, t, s, deadline)
        stops = cache.vocab.stop_token_ids
        if stops:
            stop_words = pack_token_ids(np.asarray(stops), cache.vocab.vocab_size)
            words &= ~stop_words
            if automaton.accepting[state]:
                words |= stop_words
        return words

    def hypothesis(self, cache: "TokenMaskCache", sid: int, t: int, s: int,
                   deadline: float | None) -> np.ndarray:
        b, automaton = self.builder, self.automaton
        boundary = automaton.boundary(b.parser.scan(sid, t))
        key = (t, s, boundary)
        got = self._hyp.get(key)
        if got is not None:
            self._hyp.move_to_end(key)
            return got
        dfa = b.terminals[t]
        remaining = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        words = cache.mask(dfa, s, remaining).copy()  # tokens inside the terminal
        trie = cache.vocab.trie
        exits = self._exits.get((t, s))
        if exits is None:
            exits = self._exits[(t, s)] = Exits(trie, dfa, s)
        automaton.ensure_one(boundary)
        row = automaton.flat256()[boundary * 256:(boundary + 1) * 256]
        crossing: list[Level] = []
        for depth, children in exits.levels:
            states = row[trie.level_bytes[depth][children]]
            keep = states != 0
            if keep.any():
                crossing += walk_below(trie, automaton, depth, children[keep], states[keep], deadline)
        ids = tokens_at(trie, crossing)
        if len(ids):
            words |= pack_token_ids(ids, cache.vocab.vocab_size)
        with self._lock:
            self._hyp[key] = words
            if len(self._hyp) > self.max_entries:
                self._hyp.popitem(last=False)
        return words
