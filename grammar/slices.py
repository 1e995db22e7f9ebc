"""Token slices: precomputed masks for big families of tokens, so dense states skip most of the walk.

A slice is the set of tokens made only of whole characters from a class C (by default the
characters allowed unescaped in a JSON string, ~95% of a typical vocabulary) and at most
16 bytes long.  When every C-string of up to that length survives from a grammar state, the whole slice
is allowed at once: its packed mask is OR-ed in and only the remaining tokens (a trie about
1/50 of the full one) are walked.  llguidance's "slicer" is the same idea.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np

from formwork.grammar._slice_cover import covers as _covers
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.dfa import DEAD, DFA, START
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.ir import repeat
from formwork.grammar.ir_chars import chars
from formwork.grammar.packed import pack_token_ids
from formwork.grammar.token_trie import TokenTrie
from formwork.grammar.vocabulary import Vocabulary

# characters a JSON string holds without escaping: not '"', not '\\', not a control char
JSON_STRING_CHARS = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]
_PROBES = b"~Q#"  # characters that structural states seldom allow, tried first by `covers`


class TokenSlice:
    """Tokens of at most `max_len` bytes spelled only with characters from `code_ranges`: their
    mask, and the trie of all other tokens.  (Few tokens are longer; capping the length keeps
    the coverage check short.)"""

    def __init__(self, vocab: Vocabulary, code_ranges: list[tuple[int, int]], max_len: int = 16):
        self.vocab = vocab
        self.dfa = AutomatonBuilder().eager(repeat(chars(code_ranges), 0, None))
        members = [i for i, data in enumerate(vocab.token_bytes)
                   if data is not None and len(data) <= max_len and self.dfa.accepts(data)]
        self.member_ids = np.array(members, dtype=np.intp)
        self.mask_words = pack_token_ids(self.member_ids, vocab.vocab_size)
        self.mask_words.flags.writeable = False  # shared: masks are kept as their differences from it
        self.max_len = max((len(vocab.token_bytes[i]) for i in members), default=0)
        self._slice_rows = np.ascontiguousarray(self.dfa.table, dtype=np.int32)
        self._probes = [bytes([b]) for b in _PROBES if self.dfa.accepts(bytes([b]))]  # the slice's own

    @cached_property
    def open_ids(self) -> np.ndarray:
        """Tokens of any length that some string of the slice's characters starts with (the
        members, longer ones, and ones that end part way through a character)."""
        dfa = self.dfa
        return np.array([i for i, data in enumerate(self.vocab.token_bytes)
                         if data is not None and dfa.walk(START, data) != DEAD], dtype=np.intp)

    @cached_property
    def open_words(self) -> np.ndarray:
        """Packed mask of `open_ids`: what a state after which any slice characters may follow
        (an open-ended lexeme, see `lexemes.lexeme`) allows without a walk."""
        words = pack_token_ids(self.open_ids, self.vocab.vocab_size)
        words.flags.writeable = False  # shared, as `mask_words`
        return words

    @cached_property
    def closed_trie(self) -> TokenTrie:
        """Trie of every text token outside `open_ids` (those with a quote, a backslash, a
        control character or a byte no character starts with)."""
        return self._trie_without(self.open_ids)

    @cached_property
    def rest_trie(self) -> TokenTrie:
        """Trie of every text token outside the slice."""
        return self._trie_without(self.member_ids)

    def _trie_without(self, token_ids: np.ndarray) -> TokenTrie:
        rest = list(self.vocab.token_bytes)
        for i in token_ids.tolist():
            rest[i] = None
        return TokenTrie(rest, self.vocab.vocab_size)

    def covers(self, dfa: DFA | LazyDFA, state: int) -> bool:
        """True when every token of the slice can be consumed from `state`: a breadth-first
        search over (slice state, grammar state) pairs up to the longest member's length (in C,
        `_slice_cover.c`, which builds a lazy DFA's missing rows itself), asked again after
        building the rows of states past the end of the automaton's arrays.  A few of the
        slice's characters are tried first: most states refuse one, and that costs no search."""
        for probe in self._probes:
            if dfa.walk(state, probe) == DEAD:
                return False
        while True:
            rows, class_of_byte, expanded, accepting, core = dfa.walk_tables()
            answer, blocked = _covers(self._slice_rows, rows, class_of_byte, expanded, accepting, state,
                                      self.max_len, core)
            if core is not None:
                dfa.record_new()
            if answer >= 0:
                return bool(answer)
            dfa.ensure(np.frombuffer(blocked, dtype=np.int64))
