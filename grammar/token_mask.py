"""Token masks for DFA states: a vectorised walk of the vocabulary trie, cached per state.

Masks are cached by the automaton's `state_key`, which names the state's language: recompiling
the same IR (or language) reuses them.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from functools import cached_property

import numpy as np

from formwork.grammar.dfa import DFA, DEAD
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.lexemes import lexeme_mask
from formwork.grammar.slices import JSON_STRING_CHARS, TokenSlice
from formwork.grammar.token_trie import TokenTrie
from formwork.grammar.trie_walks import descend, few_small_subtrees
from formwork.grammar.vocabulary import Vocabulary

StateKey = tuple


class TokenMaskCache:
    """LRU of packed int32 masks keyed by `StateKey`, for one vocabulary."""

    def __init__(self, vocab: Vocabulary, max_entries: int = 4096, use_slices: bool = True,
                 use_lexemes: bool = True):
        self.vocab = vocab
        self.use_slices = use_slices
        self.use_lexemes = use_lexemes
        self.sliced = 0
        self.max_entries = max_entries
        self._masks: OrderedDict[StateKey, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        words = (vocab.vocab_size + 31) // 32
        self._num_bytes = words * 4
        stop = np.zeros(vocab.vocab_size, dtype=bool)
        stop[list(vocab.stop_token_ids)] = True
        self._stop = stop
        self._stop_ids = np.array(vocab.stop_token_ids, dtype=np.intp)
        self.stop_words = pack_token_ids(self._stop_ids, vocab.vocab_size)

    def mask(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None = None) -> np.ndarray:
        """Packed int32 mask (bit 1 = allowed) of `state`, computed on first use; do not modify."""
        key = dfa.state_key(state)
        with self._lock:
            got = self._masks.get(key)
            if got is not None:
                self.hits += 1
                self._masks.move_to_end(key)
                return got
            self.misses += 1
        words = self._compute(dfa, state, max_seconds)
        with self._lock:
            self._masks[key] = words
            if len(self._masks) > self.max_entries:
                self._masks.popitem(last=False)
        return words

    def _compute(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None) -> np.ndarray:
        custom = getattr(dfa, "compute_mask", None)  # automata with their own decomposition (CFG)
        if custom is not None:
            words = custom(self, state, max_seconds)
            words.flags.writeable = False
            return words
        inside = dfa.lexeme_state(state) if self.use_lexemes and dfa.lazy else None
        if inside is not None:
            deadline = None if max_seconds is None else time.perf_counter() + max_seconds
            words = lexeme_mask(self, dfa, inside, max_seconds, deadline)
            words.flags.writeable = False
            return words
        trie, base = self.vocab.trie, None
        if self.use_slices and self.token_slice.covers(dfa, state):
            trie, base = self.token_slice.rest_trie, self.token_slice.mask_words
            self.sliced += 1
        live = walk_trie(trie, dfa, state, max_seconds)
        accepting = bool(dfa.accepting[state])
        if live.many:
            allowed = live.token_flags()
            if accepting:
                allowed |= self._stop
            packed_u8 = np.packbits(allowed, bitorder="little")
            words = np.zeros(self._num_bytes // 4, dtype=np.int32)
            words.view(np.uint8)[: len(packed_u8)] = packed_u8
        else:
            ids = live.token_ids()
            words = pack_token_ids(np.concatenate([ids, self._stop_ids]) if accepting else ids,
                                   self.vocab.vocab_size)
        if base is not None:
            words |= base
        words.flags.writeable = False
        return words

    @cached_property
    def token_slice(self) -> TokenSlice:
        """The JSON-string-character slice of this vocabulary (see `formwork.grammar.slices`)."""
        return TokenSlice(self.vocab, JSON_STRING_CHARS)

    def prepare(self) -> None:
        """Build the vocabulary trie and the slice tables now rather than on the first mask."""
        self.vocab.trie  # noqa: B018
        if self.use_slices:
            self.token_slice.rest_trie  # noqa: B018

    def __len__(self) -> int:
        return len(self._masks)


_DENSE_FRACTION = 0.2  # expand a level fully once this share of it may be live
_GATHER_NODES = 20_000  # above this many live nodes, read tokens by gathering over all ids


class LiveNodes:
    """The result of a trie walk: live nodes as a flag array (dense walks) or index lists."""

    def __init__(self, trie: TokenTrie):
        self.trie = trie
        self.flags: np.ndarray | None = None
        self.lists: list[np.ndarray] = []
        self.count = 0

    def add_dense(self, offset: int, alive: np.ndarray) -> None:
        if self.flags is None:
            self.flags = np.zeros(self.trie.num_nodes + 1, dtype=bool)
        self.flags[offset: offset + len(alive)] = alive

    def add(self, global_nodes: np.ndarray) -> None:
        self.lists.append(global_nodes)
        self.count += len(global_nodes)

    @property
    def many(self) -> bool:
        """Too many live nodes for per-node token lists: read tokens by one gather instead."""
        return self.flags is not None or self.count > _GATHER_NODES

    def token_flags(self) -> np.ndarray:
        """Bool per token id (the trie's width): its end node is live."""
        if self.flags is None:
            self.flags = np.zeros(self.trie.num_nodes + 1, dtype=bool)
        for nodes in self.lists:
            self.flags[nodes] = True
        self.lists = []
        return self.flags[self.trie.token_node]

    def token_ids(self) -> np.ndarray:
        """Ids of the tokens ending at live nodes."""
        if self.many:
            return np.flatnonzero(self.token_flags())
        if not self.lists:
            return np.zeros(0, dtype=np.intp)
        live = np.concatenate(self.lists)
        trie = self.trie
        lo, hi = trie.end_ptr[live], trie.end_ptr[live + 1]
        sizes = hi - lo
        total = int(sizes.sum())
        starts = np.cumsum(sizes) - sizes
        return trie.end_tokens[np.repeat(lo - starts, sizes) + np.arange(total)]


def walk_trie(trie: TokenTrie, dfa: DFA | LazyDFA, state: int, max_seconds: float | None = None) -> LiveNodes:
    """Trie nodes whose byte path stays alive from `state`.

    Level by level: a level is computed densely (every node, dead parents stay dead) while
    many nodes may be live, otherwise only the children of live nodes are expanded.
    """
    result = LiveNodes(trie)
    if state == DEAD or trie.max_depth == 0:
        return result
    deadline = None if max_seconds is None else time.perf_counter() + max_seconds
    lazy = dfa.lazy
    dfa.ensure_one(state)
    flat = dfa.flat256()
    nodes: np.ndarray | None = None  # None: `states` covers the whole level
    states = flat[state * 256 + trie.level_bytes[0]]
    for d in range(trie.max_depth):
        if nodes is None:
            alive = states != 0
            live = np.flatnonzero(alive)
            if len(live) > _GATHER_NODES // 8:
                result.add_dense(trie.level_offset[d], alive)
            elif len(live):
                result.add(live + trie.level_offset[d])
        else:
            keep = states != 0
            live, states = nodes[keep], states[keep]
            if len(live):
                result.add(live + trie.level_offset[d])
        if not len(live) or d + 1 == trie.max_depth:
            break
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError(f"token mask computation exceeded its step budget of {max_seconds:g} s")
        if few_small_subtrees(trie, d, live):  # in Python: a bounded number of nodes
            live_states = states[live] if nodes is None else states
            for depth, found, _ in descend(trie, dfa, d, live.tolist(), live_states.tolist()):
                result.add(found + trie.level_offset[depth])
            break
        if lazy:  # the rows of this level's states are needed for the next level
            dfa.ensure((states[live] if nodes is None else states) >> 8)
            flat = dfa.flat256()
        next_size = len(trie.level_bytes[d + 1])
        if len(live) >= _DENSE_FRACTION * next_size:
            if nodes is not None:
                full = np.zeros(len(trie.level_bytes[d]), dtype=states.dtype)
                full[live] = states
                states = full
            states = flat[states[trie.parent[d + 1]] + trie.level_bytes[d + 1]]
            nodes = None
        else:
            live_states = states[live] if nodes is None else states
            lo, hi = trie.child_lo[d][live], trie.child_hi[d][live]
            sizes = hi - lo
            total = int(sizes.sum())
            if not total:
                break
            starts = np.cumsum(sizes) - sizes
            nodes = np.repeat(lo - starts, sizes) + np.arange(total)
            states = flat[np.repeat(live_states, sizes) + trie.level_bytes[d + 1][nodes]]
    return result


def pack_token_ids(token_ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """Packed int32 bitmask words with the given token bits set."""
    words = np.zeros((vocab_size + 31) // 32, dtype=np.int32)
    packed = words.view(np.uint8)
    ids = np.asarray(token_ids, dtype=np.intp)
    np.bitwise_or.at(packed, ids >> 3, np.left_shift(1, ids & 7).astype(np.uint8))
    return words
