"""Token masks for DFA states: a vectorised walk of the vocabulary trie, cached per state.

Masks are cached by (fingerprint of the minimal DFA, state): recompiling the same language,
in any grammar object, reuses them.
"""
from __future__ import annotations

import hashlib
import time
from collections import OrderedDict

import numpy as np
import torch

from formwork.grammar.dfa import DFA, DEAD
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.vocabulary import Vocabulary

StateKey = tuple[bytes, int]


def dfa_fingerprint(dfa: DFA) -> bytes:
    """Content hash of the (canonically numbered, minimal) DFA."""
    got = dfa._cache.get("fingerprint")
    if got is None:
        h = hashlib.blake2b(dfa.table.tobytes(), digest_size=16)
        h.update(np.packbits(dfa.accepting).tobytes())
        got = dfa._cache["fingerprint"] = h.digest()
    return got


class TokenMaskCache:
    """LRU of packed int32 masks keyed by `StateKey`, for one vocabulary."""

    def __init__(self, vocab: Vocabulary, max_entries: int = 4096):
        self.vocab = vocab
        self.max_entries = max_entries
        self._masks: OrderedDict[StateKey, torch.Tensor] = OrderedDict()
        self.hits = 0
        self.misses = 0
        words = (vocab.vocab_size + 31) // 32
        self._num_bytes = words * 4
        stop = np.zeros(vocab.vocab_size, dtype=bool)
        stop[list(vocab.stop_token_ids)] = True
        self._stop = stop

    def mask(self, dfa: DFA, state: int, max_seconds: float | None = None) -> torch.Tensor:
        """Packed int32 mask (bit 1 = allowed) of `state`, computed on first use; do not modify."""
        key = (dfa_fingerprint(dfa), state)
        got = self._masks.get(key)
        if got is not None:
            self.hits += 1
            self._masks.move_to_end(key)
            return got
        self.misses += 1
        allowed = allowed_tokens(self.vocab, dfa, state, max_seconds)
        if dfa.accepting[state]:
            allowed |= self._stop
        packed = np.packbits(allowed, bitorder="little")
        packed = torch.from_numpy(np.pad(packed, (0, self._num_bytes - len(packed))).view(np.int32))
        self._masks[key] = packed
        if len(self._masks) > self.max_entries:
            self._masks.popitem(last=False)
        return packed

    def __len__(self) -> int:
        return len(self._masks)


def allowed_tokens(vocab: Vocabulary, dfa: DFA, state: int, max_seconds: float | None = None) -> np.ndarray:
    """Bool [vocab_size]: text tokens whose bytes can be consumed from `state` without dying.

    Level by level over the trie, expanding only children of live nodes.
    """
    trie = vocab.trie
    live = np.zeros(trie.num_nodes + 1, dtype=bool)
    if state == DEAD or trie.max_depth == 0:
        return live[trie.token_node]
    deadline = None if max_seconds is None else time.perf_counter() + max_seconds
    flat = dfa.table.reshape(-1)
    nodes = np.arange(len(trie.level_bytes[0]))
    states = flat[state * 256 + trie.level_bytes[0]]
    for d in range(trie.max_depth):
        keep = states != DEAD
        nodes, states = nodes[keep], states[keep]
        if not len(nodes):
            break
        live[trie.level_offset[d] + nodes] = True
        if d + 1 == trie.max_depth:
            break
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError(f"token mask computation exceeded its step budget of {max_seconds:g} s")
        lo, hi = trie.child_lo[d][nodes], trie.child_hi[d][nodes]
        sizes = hi - lo
        total = int(sizes.sum())
        if not total:
            break
        starts = np.cumsum(sizes) - sizes
        children = np.repeat(lo - starts, sizes) + np.arange(total)
        parent_states = np.repeat(states.astype(np.int64), sizes)
        states = flat[parent_states * 256 + trie.level_bytes[d + 1][children]]
        nodes = children
    return live[trie.token_node]
