"""Token masks for DFA states: a walk of the vocabulary trie (native_walk), cached per state.

Masks are cached by the automaton's `state_key`, which names the state's language: recompiling
the same IR (or language) reuses them.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from functools import cached_property

import numpy as np

from formwork.grammar.dfa import DFA
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.lexemes import lexeme_mask
from formwork.grammar.native_walk import walk_state
from formwork.grammar.packed import pack_token_ids
from formwork.grammar.slices import JSON_STRING_CHARS, TokenSlice
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
        self.stop_words = pack_token_ids(np.array(vocab.stop_token_ids, dtype=np.intp), vocab.vocab_size)
        self.text_words = ~self.stop_words  # every bit but the stop tokens'

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
        if self.use_slices and dfa.lazy and dfa.in_open_lexeme(state):
            trie, base = self.token_slice.closed_trie, self.token_slice.open_words
            self.sliced += 1
        elif self.use_slices and self.token_slice.covers(dfa, state):
            trie, base = self.token_slice.rest_trie, self.token_slice.mask_words
            self.sliced += 1
        words = np.zeros(self._num_bytes // 4, dtype=np.int32)
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        walk_state(trie, dfa, state, words, deadline)
        if dfa.accepting[state]:
            words |= self.stop_words
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
        self.vocab.trie.walk_layout  # noqa: B018
        if self.use_slices:
            self.token_slice.rest_trie.walk_layout  # noqa: B018
            self.token_slice.closed_trie.walk_layout  # noqa: B018
            self.token_slice.open_words  # noqa: B018

    def __len__(self) -> int:
        return len(self._masks)
