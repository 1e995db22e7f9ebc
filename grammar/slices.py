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

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.dfa import DEAD, DFA, START
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
        # per live slice-DFA state: (next slice state, the bytes that lead there)
        self._moves = {
            u: [(int(v), np.flatnonzero(self.dfa.table[u] == v)) for v in np.unique(self.dfa.table[u]) if v != DEAD]
            for u in range(1, self.dfa.num_states)
        }

    @cached_property
    def rest_trie(self) -> TokenTrie:
        """Trie of every text token outside the slice."""
        rest = list(self.vocab.token_bytes)
        for i in self.member_ids.tolist():
            rest[i] = None
        return TokenTrie(rest, self.vocab.vocab_size)

    def covers(self, dfa: DFA, state: int) -> bool:
        """True when every token of the slice can be consumed from `state`.

        Breadth-first over (slice state, grammar state) pairs: False at the first death within
        the longest member's length; True once no new pair appears or that length is reached.
        """
        moves = self._class_moves(dfa)
        memo = dfa._cache.setdefault(("slice_steps", id(self)), {})
        frontier = [(START, state)]
        seen = set(frontier)
        for _ in range(self.max_len):
            nxt = []
            for pair in frontier:
                steps = memo.get(pair)
                if steps is None:
                    row = dfa.class_row(pair[1])
                    steps = memo[pair] = [(v, set(row[classes].tolist())) for v, classes in moves[pair[0]]]
                for v, targets in steps:
                    if DEAD in targets:
                        return False
                    for q in targets:
                        if (v, q) not in seen:
                            seen.add((v, q))
                            nxt.append((v, q))
            if not nxt:
                return True
            frontier = nxt
        return True

    def _class_moves(self, dfa: DFA) -> dict[int, list[tuple[int, np.ndarray]]]:
        """The slice DFA's moves with byte sets replaced by `dfa`'s byte classes."""
        key = ("slice_moves", id(self))
        got = dfa._cache.get(key)
        if got is None:
            class_of_byte = dfa.byte_classes()[0]
            got = dfa._cache[key] = {u: [(v, np.unique(class_of_byte[byte_set])) for v, byte_set in moves]
                                     for u, moves in self._moves.items()}
        return got
