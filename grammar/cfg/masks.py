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
import weakref
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


def walk_below(trie: TokenTrie, dfa, seeds: list[Level], deadline: float | None) -> list[Level]:
    """Live descendants of the live seed nodes (with their automaton states * 256), level by level,
    the seeds included; seeds at the same depth may come in several pieces."""
    by_depth: dict[int, list[Level]] = {}
    for seed in seeds:
        if len(seed[1]):
            by_depth.setdefault(seed[0], []).append(seed)
    out: list[Level] = []
    if not by_depth:
        return out
    depth = min(by_depth)
    nodes = np.zeros(0, dtype=np.int64)
    states = np.zeros(0, dtype=np.intp)
    while depth < trie.max_depth:
        extra = by_depth.pop(depth, ())
        if extra:
            nodes = np.concatenate([nodes, *(n for _, n, _ in extra)])
            states = np.concatenate([states, *(st for _, _, st in extra)])
        if not len(nodes):
            if not by_depth:
                break
            depth = min(by_depth)  # nothing live in between: jump to the next seeds
            continue
        out.append((depth, nodes, states))
        if depth + 1 >= trie.max_depth:
            break
        if len(nodes) <= _SMALL_FRONTIER:  # a few deep paths (e.g. runs of spaces): no per-level numpy
            below = _descend(trie, dfa, depth, nodes.tolist(), states.tolist())
            if below is not None:
                out += below
                nodes, states = nodes[:0], states[:0]
                if not by_depth:
                    break
                depth = min(by_depth)
                continue
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        lo, hi = trie.child_lo[depth][nodes], trie.child_hi[depth][nodes]
        sizes = hi - lo
        total = int(sizes.sum())
        children = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(total)
        if dfa.lazy:
            dfa.ensure(states >> 8)
        nxt = dfa.flat256()[np.repeat(states, sizes) + trie.level_bytes[depth + 1][children]]
        keep = nxt != 0
        nodes, states = children[keep], nxt[keep]
        depth += 1
    return out


_SMALL_FRONTIER = 24
_PYTHON_VISITS = 2048  # children a Python descent may look at before giving up


def _descend(trie: TokenTrie, dfa, depth: int, nodes: list[int], states: list[int]) -> list[Level] | None:
    """Live strict descendants of a few live nodes, walked in Python (None: too many children
    to visit this way, walk by levels instead)."""
    found: dict[int, tuple[list[int], list[int]]] = {}
    stack = list(zip([depth] * len(nodes), nodes, states))
    lazy = dfa.lazy
    budget = _PYTHON_VISITS
    while stack:
        d, node, st = stack.pop()
        if d + 1 >= trie.max_depth:
            continue
        lo, hi = int(trie.child_lo[d][node]), int(trie.child_hi[d][node])
        if lo == hi:
            continue
        budget -= hi - lo
        if budget < 0:
            return None
        if lazy:
            dfa.ensure_one(st >> 8)
        row = dfa.flat256()[st: st + 256]
        level_bytes = trie.level_bytes[d + 1]
        for child in range(lo, hi):
            nxt = int(row[level_bytes[child]])
            if nxt:
                got = found.setdefault(d + 1, ([], []))
                got[0].append(child)
                got[1].append(nxt)
                stack.append((d + 1, child, nxt))
    return [(d, np.asarray(n, dtype=np.int64), np.asarray(st, dtype=np.intp)) for d, (n, st) in found.items()]


def tokens_at(trie: TokenTrie, levels: list[Level]) -> np.ndarray:
    """Ids of the tokens ending at the given nodes."""
    if not levels:
        return np.zeros(0, dtype=np.int64)
    live = np.concatenate([nodes + trie.level_offset[d] for d, nodes, _ in levels])
    lo, hi = trie.end_ptr[live], trie.end_ptr[live + 1]
    sizes = hi - lo
    return trie.end_tokens[np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))]


class Exits:
    """Where terminal t, from state s, may end before a token does: the children of those trie
    nodes (the first byte after the terminal), indexed by that byte."""

    def __init__(self, trie: TokenTrie, dfa, state: int):
        dfa.ensure_one(state)
        first = dfa.flat256()[state * 256 + trie.level_bytes[0]]
        live = np.flatnonzero(first)
        depths, nodes_out = [], []
        for depth, nodes, states in walk_below(trie, dfa, [(0, live, first[live])], None):
            if depth + 1 >= trie.max_depth:
                continue
            ends = nodes[dfa.accepting[states >> 8]]
            lo, hi = trie.child_lo[depth][ends], trie.child_hi[depth][ends]
            sizes = hi - lo
            total = int(sizes.sum())
            if total:
                nodes_out.append(np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(total))
                depths.append(np.full(total, depth + 1, dtype=np.int64))
        node = np.concatenate(nodes_out) if nodes_out else np.zeros(0, dtype=np.int64)
        depth = np.concatenate(depths) if depths else np.zeros(0, dtype=np.int64)
        byte = (np.concatenate([trie.level_bytes[d][n] for d, n in zip(
            [int(x[0]) for x in depths], nodes_out)]) if nodes_out else np.zeros(0, dtype=np.int64))
        order = np.lexsort((depth, byte))  # by byte, then depth
        self.node, self.depth, self.byte = node[order], depth[order], byte[order]
        self.byte_ptr = np.searchsorted(self.byte, np.arange(257))

    def seeds(self, row: np.ndarray) -> list[Level]:
        """Children whose byte `row` (next state * 256 per byte) keeps alive, grouped by depth."""
        alive = np.flatnonzero(row[: 256])
        lo, hi = self.byte_ptr[alive], self.byte_ptr[alive + 1]
        sizes = hi - lo
        total = int(sizes.sum())
        if not total:
            return []
        sel = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(total)
        states = np.repeat(row[alive], sizes)
        depth = self.depth[sel]
        order = np.argsort(depth, kind="stable")
        sel, states, depth = sel[order], states[order], depth[order]
        cuts = np.flatnonzero(np.diff(depth)) + 1
        return [(int(d[0]), n, st) for d, n, st in zip(np.split(depth, cuts), np.split(self.node[sel], cuts),
                                                        np.split(states, cuts))]


_EXITS: "weakref.WeakKeyDictionary[TokenTrie, OrderedDict]" = weakref.WeakKeyDictionary()
_EXITS_LOCK = threading.Lock()
_MAX_EXITS = 2048  # per vocabulary trie


def _shared_exits(trie: TokenTrie, dfa, state: int) -> Exits:
    """`Exits` of a terminal state, shared by every grammar whose terminal has the same language
    (keyed like the token-mask cache, by the automaton's state key)."""
    key = dfa.state_key(state)
    with _EXITS_LOCK:
        table = _EXITS.setdefault(trie, OrderedDict())
        got = table.get(key)
        if got is not None:
            table.move_to_end(key)
            return got
    got = Exits(trie, dfa, state)
    with _EXITS_LOCK:
        table[key] = got
        if len(table) > _MAX_EXITS:
            table.popitem(last=False)
    return got


class ConfigMasks:
    """Per-configuration masks of one CFG automaton (see the module docstring)."""

    def __init__(self, automaton: "ConfigDFA", max_entries: int = 512):
        self.automaton = automaton
        self.builder = automaton.builder
        self.max_entries = max_entries
        self._hyp: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._stop_words: np.ndarray | None = None
        self._lock = threading.Lock()

    def compute(self, cache: "TokenMaskCache", state: int, max_seconds: float | None) -> np.ndarray:
        automaton = self.automaton
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        b = self.builder
        words = np.zeros((cache.vocab.vocab_size + 31) // 32, dtype=np.int32)
        for sid, t, s in b.sets[state]:
            if deadline is not None and time.perf_counter() > deadline:
                raise GrammarBudgetError(f"token mask computation exceeded its step budget of {max_seconds:g} s")
            if t == -1:
                for t2 in b.parser.expected(sid):
                    words |= self.hypothesis(cache, sid, t2, START, deadline)
            else:
                words |= self.hypothesis(cache, sid, t, s, deadline)
        if self._stop_words is None:
            self._stop_words = pack_token_ids(np.asarray(cache.vocab.stop_token_ids, dtype=np.int64),
                                              cache.vocab.vocab_size)
        words &= ~self._stop_words  # terminal masks allow stops where the terminal may end...
        if automaton.accepting[state]:  # ...but only the whole parse decides
            words |= self._stop_words
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
        exits = _shared_exits(trie, dfa, s)
        automaton.ensure_one(boundary)
        row = automaton.flat256()[boundary * 256:(boundary + 1) * 256]
        ids = tokens_at(trie, walk_below(trie, automaton, exits.seeds(row), deadline))
        if len(ids):
            words |= pack_token_ids(ids, cache.vocab.vocab_size)
        with self._lock:
            self._hyp[key] = words
            if len(self._hyp) > self.max_entries:
                self._hyp.popitem(last=False)
        return words
