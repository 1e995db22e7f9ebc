"""The native walk past a lexeme (`native_walk.walk_after` over `_trie_walk.walk_after`) and the
exit seeds it starts from (`follow_exits.exit_nodes_after`), against per-token brute force on
small vocabularies with fresh lazy automata (rows built inside the walk, or in rounds)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from test_native_walk import ALPHABET, regexes, tokens_strategy  # noqa: E402

from formwork.grammar import Vocabulary  # noqa: E402
from formwork.grammar._trie_walk import live_bytes as raw_live_bytes, walk_after as raw_walk_after  # noqa: E402
from formwork.grammar.automaton import AutomatonBuilder  # noqa: E402
from formwork.grammar.dfa import DEAD, START  # noqa: E402
from formwork.grammar.follow_exits import exit_nodes_after  # noqa: E402
from formwork.grammar.ir import lit, repeat, seq  # noqa: E402
from formwork.grammar.native_walk import walk_after  # noqa: E402
from formwork.grammar.packed import unpack_token_ids  # noqa: E402

prefixes_strategy = st.binary(max_size=3).map(lambda b: bytes(ALPHABET[x % 6] for x in b))


def _leaves_and_goes_on(data: bytes, lexeme, state: int, doc, after: int) -> bool:
    """Whether a non-empty prefix of `data` takes `lexeme` from `state` to acceptance and the rest
    (a byte at least) keeps `doc` alive from `after`: the token leaves the lexeme part way."""
    for cut in range(1, len(data)):
        at = lexeme.walk(state, data[:cut])
        if at == DEAD:
            return False
        if lexeme.accepting[at] and doc.walk(after, data[cut:]) != DEAD:
            return True
    return False


def _brute_force(tokens: list[bytes], lexeme, state: int, doc, after: int, from_root: bool) -> set[int]:
    return {i for i, data in enumerate(tokens)
            if _leaves_and_goes_on(data, lexeme, state, doc, after) or (from_root and doc.walk(after, data) != DEAD)}


@settings(deadline=None, max_examples=80)
@given(tokens=tokens_strategy, lexeme_term=regexes(), doc_term=regexes(), lexeme_prefix=prefixes_strategy,
       doc_prefix=prefixes_strategy, from_root=st.booleans())
def test_walk_after_is_the_brute_force_union(tokens, lexeme_term, doc_term, lexeme_prefix, doc_prefix, from_root):
    """From the exit seeds of the bytes the document allows after the lexeme, each in the state
    that byte leads to, and (`from_root`) from the root in that state: the tokens that leave the
    lexeme part way and go on in the document, and the document state's own tokens."""
    vocab = Vocabulary(tokens)
    lexeme = AutomatonBuilder().dfa(lexeme_term)
    doc = AutomatonBuilder().dfa(doc_term)  # fresh and lazy: the walk builds its rows
    state, after = lexeme.walk(START, lexeme_prefix), doc.walk(START, doc_prefix)
    if state == DEAD or after == DEAD:
        return
    follow = doc.live_bytes(after)
    exits = exit_nodes_after(vocab.trie, lexeme, state, follow) if follow else b""
    words = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    walk_after(vocab.trie, doc, exits, after, from_root, words)
    assert set(unpack_token_ids(words).tolist()) == _brute_force(tokens, lexeme, state, doc, after, from_root)


def test_walk_after_goes_on_in_rounds_past_the_arrays():
    """The document's states past its row arrays are handed back and walked in later rounds."""
    tokens = [b'x"' + b"a" * 150, b'x"' + b"a" * 151, b'"' + b"a" * 100, b"x", b'xx"a']
    vocab = Vocabulary(tokens)
    lexeme = AutomatonBuilder().dfa(repeat(lit("x"), 1, None))
    doc = AutomatonBuilder().dfa(seq(lit('"'), lit("a" * 150)))
    words = np.zeros(1, dtype=np.int32)
    walk_after(vocab.trie, doc, exit_nodes_after(vocab.trie, lexeme, START, doc.live_bytes(START)), START, True, words)
    assert set(unpack_token_ids(words).tolist()) == {0, 2, 4}


def test_malformed_arguments_are_an_error_not_a_crash():
    vocab = Vocabulary([b"ab", b"b"])
    dfa = AutomatonBuilder().dfa(lit("ab")).materialize()
    rows, classes, expanded, accepting, _ = dfa.walk_tables()
    layout, words = vocab.trie.walk_layout, np.zeros(1, dtype=np.int32)
    node = np.array([0], dtype=np.int64).tobytes()
    with pytest.raises(ValueError, match="no row"):  # not a state of the table
        raw_walk_after(rows, classes, expanded, accepting, layout, node, 99, True, words)
    with pytest.raises(ValueError, match="exit node"):  # the root, or past it, is no exit
        raw_walk_after(rows, classes, expanded, accepting, layout, np.array([vocab.trie.num_nodes], dtype=np.int64),
                       START, False, words)
    with pytest.raises(ValueError, match="sizes"):
        raw_walk_after(rows, classes, expanded, accepting, layout, b"123", START, False, words)
    with pytest.raises(ValueError, match="inconsistent"):
        raw_live_bytes(rows, classes, 99)
    with pytest.raises(ValueError, match="inconsistent"):
        raw_live_bytes(rows, np.full(256, -1, dtype=np.int32), START)
    assert raw_live_bytes(rows, classes, START) == b"a"
