"""Token masks of document states inside a lexeme (see `formwork.grammar.lexemes`): the lexeme's
own shared mask plus the tokens that leave it part way, and the warm-up of counted lexemes' masks."""
from __future__ import annotations

from typing import Protocol

import numpy as np

from formwork.grammar.dfa import DFA
from formwork.grammar.follow_exits import exit_nodes_after
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.lexemes import HORIZON, LexemeState, counted_place
from formwork.grammar.native_walk import walk_after
from formwork.grammar.slices import TokenSlice
from formwork.grammar.vocabulary import Vocabulary


class MaskSource(Protocol):
    """What these functions need of a `TokenMaskCache`."""

    vocab: Vocabulary
    use_slices: bool
    stop_words: np.ndarray
    token_slice: TokenSlice

    def lexeme_base(self, automaton: DFA | LazyDFA, state: int, max_seconds: float | None = None,
                    pin: bool = False) -> np.ndarray: ...


def warm_counted_masks(cache: MaskSource, counted: LazyDFA) -> None:
    """Compute the token masks of `item{0,HORIZON}` between repetitions, for every count left:
    once per vocabulary, since every bounded repetition of `item` in any grammar shares them."""
    for done in range(HORIZON, -1, -1):  # most left last: its walk reuses the states built before
        cache.lexeme_base(counted, counted_place(counted, done), pin=True)


def warm_slice_states(cache: MaskSource, automaton: DFA) -> int:
    """Compute the own masks of the states of a shared eager automaton (the any-JSON value) that
    admit the whole token slice: inside its strings, between two characters.  Each allows most
    of the vocabulary and costs ~200 µs to walk (the rest trie, mostly alive there), the
    costliest of its states, which a document inside such a value would otherwise pay on its
    first mask there.  Returns how many."""
    if not cache.use_slices:
        return 0
    token_slice, count = cache.token_slice, 0
    for state in range(1, automaton.num_states):
        if token_slice.covers(automaton, state):
            cache.lexeme_base(automaton, state, pin=True)
            count += 1
    return count


def lexeme_mask_into(words: np.ndarray, cache: MaskSource, dfa: LazyDFA, where: LexemeState,
                     max_seconds: float | None, deadline: float | None) -> np.ndarray:
    """The packed mask of a document state inside a lexeme: the tokens inside the lexeme (the
    lexeme's own mask, returned) and, written into `words` (all zero), the tokens that leave it
    part way and (where it may end here) the tokens of the state after it, all found by one
    native walk (`walk_after`): from the exit seeds of the bytes that may follow the lexeme, each
    in the state after that byte, and where the lexeme may end here from the root in the state
    after it."""
    trie = cache.vocab.trie
    automaton, state, after = where.automaton, where.state, where.after
    counted = where.counted if trie.max_depth <= HORIZON else None
    inside = cache.lexeme_base(*((counted.automaton, counted.state) if counted else (automaton, state)), max_seconds)
    follow = dfa.live_bytes(after)  # (builds the row of `after`, which `walk_after` reads)
    if where.ends and dfa.accepting[after]:
        words |= cache.stop_words
    if counted is not None and counted.past_min:  # ends where the shared automaton ends: its exits
        automaton, state = counted.automaton, counted.state
    exits = exit_nodes_after(trie, automaton, state, follow) if follow else b""
    if exits or (where.ends and follow):
        walk_after(trie, dfa, exits, after, where.ends, words, deadline)
    return inside
