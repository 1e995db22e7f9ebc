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
from formwork.grammar.dfa import DFA, START
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.ir import chars, repeat
from formwork.grammar.token_trie import TokenTrie
from formwork.grammar.vocabulary import Vocabulary

# characters a JSON string holds without escaping: not '"', not '\\', not a control char
JSON_STRING_CHARS = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]


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
        bits = np.zeros(vocab.vocab_size, dtype=bool)
        bits[self.member_ids] = True
        packed = np.packbits(bits, bitorder="little")
        words = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
        words.view(np.uint8)[: len(packed)] = packed
        self.mask_words = words
        self.max_len = max((len(vocab.token_bytes[i]) for i in members), default=0)
        self._slice_rows = np.ascontiguousarray(self.dfa.table, dtype=np.int32)

    @cached_property
    def rest_trie(self) -> TokenTrie:
        """Trie of every text token outside the slice."""
        rest = list(self.vocab.token_bytes)
        for i in self.member_ids.tolist():
            rest[i] = None
        return TokenTrie(rest, self.vocab.vocab_size)

    def covers(self, dfa: DFA | LazyDFA, state: int) -> bool:
        """True when every token of the slice can be consumed from `state`: a breadth-first
        search over (slice state, grammar state) pairs up to the longest member's length (in C,
        `_slice_cover.c`), asked again after building the grammar rows it found missing.

        A missing row at the slice's start is not built when the grammar state holds a looping
        NFA state that covers the slice on its own (the free-form part of an open object's keys):
        otherwise the search would build the states of every declared key name."""
        while True:
            rows, class_of_byte, expanded, _ = dfa.walk_tables()
            covered = self._covered(dfa, len(expanded))
            answer, blocked = _covers(self._slice_rows, rows, class_of_byte, expanded, covered, state, self.max_len)
            if answer >= 0:
                return bool(answer)
            need = []
            for u, q in np.frombuffer(blocked, dtype=np.int64).reshape(-1, 2).tolist():
                if u == START and dfa.lazy and self._loop_covers(dfa, q):
                    self._covered(dfa)[q] = True  # (a nested search may have grown the flags)
                else:
                    need.append(q)
            if need:
                dfa.ensure(need)

    def _covered(self, dfa: DFA | LazyDFA, size: int = 0) -> np.ndarray:
        """`dfa`'s flags of states known to cover the slice (grown to `size`)."""
        key = ("slice_covered", id(self))
        got = dfa._cache.get(key)
        if got is None or len(got) < size:
            grown = np.zeros(max(size, 64, 2 * len(got) if got is not None else 0), dtype=bool)
            if got is not None:
                grown[: len(got)] = got
            got = dfa._cache[key] = grown
        return got

    def _loop_covers(self, dfa: LazyDFA, q: int) -> bool:
        """Whether one looping NFA state of grammar state `q` covers the slice by itself (each
        such part is searched once per automaton; False while its own search is under way)."""
        known = dfa._cache.setdefault(("slice_loops", id(self)), {})
        for part in dfa.looping_parts(q):
            got = known.get(part)
            if got is None:
                known[part] = False
                got = known[part] = self.covers(dfa, part)
            if got:
                return True
        return False
