"""Token masks for DFA states: a walk of the vocabulary trie (native_walk), cached per state.

Masks are cached by the automaton's `state_key`, which names the state's language: recompiling
the same IR (or language) reuses them.  They are computed in reused zeroed buffers and kept as
`StoredMask`s (the words that differ from a shared dense mask), so a miss touches no new memory.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from functools import cached_property

import numpy as np

from formwork.grammar.dfa import DFA
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.lexeme_masks import lexeme_mask_into
from formwork.grammar.native_walk import walk_state
from formwork.grammar.packed import pack_token_ids
from formwork.grammar.slices import JSON_STRING_CHARS, TokenSlice
from formwork.grammar.stored_mask import StoredMask
from formwork.grammar.twin_places import twin_place
from formwork.grammar.vocabulary import Vocabulary

StateKey = tuple
_WITHOUT_STOPS = "without stops"  # `lexeme_base`'s entries: (this, the state's key)


class TokenMaskCache:
    """LRU of token masks (`StoredMask`) keyed by `StateKey`, for one vocabulary."""

    def __init__(self, vocab: Vocabulary, max_entries: int = 4096, use_slices: bool = True,
                 use_lexemes: bool = True):
        self.vocab = vocab
        self.use_slices = use_slices
        self.use_lexemes = use_lexemes
        self.sliced = 0
        self.max_entries = max_entries
        self._masks: OrderedDict[StateKey, StoredMask] = OrderedDict()
        # masks computed at start-up to spare documents their first visits (`lexeme_base(pin=True)`):
        # never evicted, else a long-running server's traffic pushes them out of the LRU
        self._pinned: dict[StateKey, StoredMask] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._num_words = (vocab.vocab_size + 31) // 32
        self._scratch: list[np.ndarray] = []  # zeroed buffers to compute masks in (nested calls take one each)
        self._prepared = False
        self.stop_words = pack_token_ids(np.array(vocab.stop_token_ids, dtype=np.intp), vocab.vocab_size)
        self.text_words = ~self.stop_words  # every bit but the stop tokens'

    def stored(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None = None) -> StoredMask:
        """The mask of `state` as the cache keeps it, computed on first use."""
        key = dfa.state_key(state)
        got = self._lookup(key)
        if got is None:
            got = self._keep(key, self._compute_stored(dfa, state, max_seconds))
        return got

    def _lookup(self, key: StateKey) -> StoredMask | None:
        """The kept entry of `key` (now the most recent), or None (a miss, counted)."""
        with self._lock:
            got = self._masks.get(key)
            if got is not None:
                self.hits += 1
                self._masks.move_to_end(key)
                return got
            got = self._pinned.get(key)
            if got is None:
                self.misses += 1
            else:
                self.hits += 1
            return got

    def _keep(self, key: StateKey, mask: StoredMask, pin: bool = False) -> StoredMask:
        with self._lock:
            if pin:
                self._masks.pop(key, None)
                self._pinned[key] = mask
            else:
                self._masks[key] = mask
                if len(self._masks) > self.max_entries:
                    self._masks.popitem(last=False)
        return mask

    def mask(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None = None) -> np.ndarray:
        """Packed int32 mask (bit 1 = allowed) of `state`, computed on first use; read-only."""
        return self.stored(dfa, state, max_seconds).dense()

    def lexeme_base(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None = None,
                    pin: bool = False) -> np.ndarray:
        """The mask of a lexeme automaton's `state` without the stop tokens (its stop bits say
        the lexeme is complete, not the document), dense and read-only: the shared base that the
        masks of document states inside the lexeme are kept against.  Cached beside `stored`;
        a lexeme's state with a place in its boundary twin takes the twin's (`twin_places`).
        `pin` keeps the entry outside the LRU for good (the start-up warm-ups' masks)."""
        key = (_WITHOUT_STOPS, dfa.state_key(state))
        got = self._lookup(key)
        if got is None:
            twin = getattr(dfa, "boundary_twin", None)
            place = None if twin is None else twin_place(dfa, state, twin)
            if place is not None:  # the twin's mask, which every schema shares
                dense = self.lexeme_base(twin, place, max_seconds, pin)
            else:
                dense = self._text_dense(dfa, state, max_seconds)
            got = self._keep(key, StoredMask(self._num_words, dense), pin)
        elif pin:
            self._keep(key, got, pin=True)
        return got.base

    @property
    def num_pinned(self) -> int:
        """Masks kept outside the LRU (`lexeme_base(pin=True)`)."""
        return len(self._pinned)

    def keys(self) -> set[StateKey]:
        """The keys of every mask kept now, in the LRU or pinned."""
        with self._lock:
            return set(self._masks) | set(self._pinned)

    def _text_dense(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None) -> np.ndarray:
        """The dense read-only mask of `state` without the stop tokens, computed straight into a
        scratch buffer (no entry of the mask with its stop tokens, which only this needs)."""
        if getattr(dfa, "compute_mask", None) is not None:
            dense = self.stored(dfa, state, max_seconds).dense() & self.text_words
        else:
            scratch = self._scratch.pop() if self._scratch else np.zeros(self._num_words, dtype=np.int32)
            try:
                base = self._compute_into(scratch, dfa, state, max_seconds)
                dense = scratch & self.text_words if base is None else (scratch | base) & self.text_words
            finally:
                scratch.fill(0)
                self._scratch.append(scratch)
        dense.flags.writeable = False
        return dense

    def _compute_stored(self, dfa: DFA | LazyDFA, state: int, max_seconds: float | None) -> StoredMask:
        custom = getattr(dfa, "compute_mask", None)  # automata with their own decomposition (CFG)
        if custom is not None:
            return StoredMask.of(custom(self, state, max_seconds), owned=True)
        scratch = self._scratch.pop() if self._scratch else np.zeros(self._num_words, dtype=np.int32)
        try:
            base = self._compute_into(scratch, dfa, state, max_seconds)
        except BaseException:
            scratch.fill(0)
            self._scratch.append(scratch)
            raise
        got = StoredMask.over(scratch, base)
        self._scratch.append(scratch)
        return got

    def _compute_into(self, words: np.ndarray, dfa: DFA | LazyDFA, state: int,
                      max_seconds: float | None) -> np.ndarray | None:
        """Write into `words` (all zero) the tokens `state` allows beyond the shared dense mask
        it returns (None: zeros), which its mask mostly agrees with: the mask is `base | words`."""
        if not self._prepared:  # the per-vocabulary tables are built once, not charged to this step's budget
            self.prepare()
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        inside = dfa.lexeme_state(state) if self.use_lexemes and dfa.lazy else None
        if inside is not None:
            return lexeme_mask_into(words, self, dfa, inside, max_seconds, deadline)
        trie, base = self.vocab.trie, None
        if self.use_slices and self.use_lexemes and dfa.lazy and dfa.in_open_lexeme(state):
            # past the lexeme path only at a lexeme's start; inside (mid-escape) tokens of string
            # characters are not all allowed
            trie, base = self.token_slice.closed_trie, self.token_slice.open_words
            self.sliced += 1
        elif self.use_slices and self.token_slice.covers(dfa, state):
            trie, base = self.token_slice.rest_trie, self.token_slice.mask_words
            self.sliced += 1
        walk_state(trie, dfa, state, words, deadline)
        if dfa.accepting[state]:
            words |= self.stop_words
        return base

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
        self._prepared = True

    def __len__(self) -> int:
        return len(self._masks)
