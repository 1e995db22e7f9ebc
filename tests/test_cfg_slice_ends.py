"""`slice_never_ends` (a level at a time over coded pairs) against the pair-by-pair search."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from formwork.grammar import Vocabulary
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.cfg.terminal_tables import slice_never_ends
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.ir import alt, lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.token_mask import TokenMaskCache

ALPHABET = b'a "\\x'
PIECES = [lit('"'), lit("a"), lit("x"), chars([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E)]), lit('\\"')]


@st.composite
def terms(draw, depth: int = 2):
    if depth == 0:
        return draw(st.sampled_from(PIECES))
    kind = draw(st.sampled_from(["leaf", "seq", "alt", "star"]))
    if kind == "leaf":
        return draw(st.sampled_from(PIECES))
    if kind == "star":
        return repeat(draw(terms(depth - 1)), draw(st.integers(0, 1)), None)
    return (seq if kind == "seq" else alt)(draw(terms(depth - 1)), draw(terms(depth - 1)))


def _reference(token_slice, dfa, state: int) -> bool:
    """Pair by pair: does some slice token take the terminal to acceptance part way?"""
    if dfa.accepting[state]:
        return False
    frontier = {(START, state)}
    seen = set(frontier)
    for _ in range(token_slice.max_len):
        nxt = set()
        for u, q in frontier:
            for byte in range(256):
                pair = (int(token_slice.dfa.table[u, byte]), dfa.walk(q, bytes([byte])))
                if DEAD not in pair and pair not in seen:
                    seen.add(pair)
                    nxt.add(pair)
        if any(dfa.accepting[q] for _, q in nxt):
            return False
        if not nxt:
            return True
        frontier = nxt
    return True


tokens_strategy = st.lists(st.binary(min_size=1, max_size=6).map(lambda b: bytes(ALPHABET[x % 5] for x in b)),
                           min_size=1, max_size=30, unique=True)


@settings(deadline=None, max_examples=40)
@given(tokens=tokens_strategy, term=terms(), prefix=st.binary(max_size=2).map(
    lambda b: bytes(ALPHABET[x % 5] for x in b)))
def test_slice_never_ends_is_the_pairwise_search(tokens, term, prefix):
    token_slice = TokenMaskCache(Vocabulary(tokens)).token_slice
    dfa = AutomatonBuilder().dfa(term)
    state = dfa.walk(START, prefix)
    if state == DEAD:
        return
    assert slice_never_ends(token_slice, dfa, state) == _reference(token_slice, dfa, state)
