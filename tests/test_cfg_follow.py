"""The one-call continuation walk (`native_walk.follow`, in C) against the round-based Python
path it stands for (exit seeds, `walk_into`, nonzero words), on small vocabularies with lazy
automata; blocked walks hand back None with the scratch mask zero; bad input raises."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from test_native_walk import ALPHABET, regexes, tokens_strategy  # noqa: E402

from formwork.grammar import Vocabulary  # noqa: E402
from formwork.grammar._packed import nonzero_words  # noqa: E402
from formwork.grammar._trie_walk import follow as raw_follow  # noqa: E402
from formwork.grammar.automaton import AutomatonBuilder  # noqa: E402
from formwork.grammar.cfg.continuations import continuation  # noqa: E402
from formwork.grammar.dfa import DEAD, START  # noqa: E402
from formwork.grammar.ir import lit  # noqa: E402
from formwork.grammar.native_walk import follow, walk_into, walk_state  # noqa: E402
from formwork.grammar.terminal_exits import Exits  # noqa: E402


def _row(dfa) -> np.ndarray:
    return np.ascontiguousarray(dfa.row(START), dtype=np.int64)


@settings(deadline=None, max_examples=80)
@given(tokens=tokens_strategy, first=regexes(), second=regexes(), prefix=st.binary(max_size=3).map(
    lambda b: bytes(ALPHABET[x % 6] for x in b)))
def test_follow_is_the_python_walk(tokens, first, second, prefix):
    """From where `first` may end inside tokens, into `second`: the same words and exits."""
    vocab = Vocabulary(tokens)
    dfa = AutomatonBuilder().dfa(first)
    state = dfa.walk(START, prefix)
    if state == DEAD:
        return
    scratch = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    source = Exits(vocab.trie, walk_state(vocab.trie, dfa, state, scratch.copy(), want_exits=True))
    reference, native = AutomatonBuilder().dfa(second), AutomatonBuilder().dfa(second)  # fresh lazy ones
    nodes, states = source.seeds(_row(reference))
    want_words = np.zeros_like(scratch)
    want_exits = walk_into(vocab.trie, reference, nodes, states, want_words, want_exits=True)
    got = follow(vocab.trie, native, source.node, _row(native), scratch)
    assert got is not None
    at, bits, exits = got
    assert (at, bits) == nonzero_words(want_words)
    assert np.array_equal(np.frombuffer(exits, dtype=np.int64), np.unique(want_exits))
    assert not scratch.any()


def test_a_blocked_walk_is_none_and_leaves_the_mask_zero():
    """States interned past the end of the row arrays stop the one-call walk; `continuation`
    then walks in rounds and finds the same tokens."""
    tokens = [b"x", b"x" + b"a" * 150, b"x" + b"a" * 70, b"x" + b"a" * 151]
    vocab = Vocabulary(tokens)
    exits = Exits(vocab.trie, vocab.trie.token_node[[0]] + 1)  # the node after "x"
    dfa = AutomatonBuilder().dfa(lit("a" * 150))
    scratch = np.zeros(1, dtype=np.int32)
    assert follow(vocab.trie, dfa, exits.node, _row(dfa), scratch) is None
    assert not scratch.any()
    step = continuation(exits, AutomatonBuilder().dfa(lit("a" * 150)), None)
    assert step.at.tolist() == [0] and step.bits.tolist() == [0b0110]


def test_malformed_input_is_an_error_not_a_crash():
    vocab = Vocabulary([b"ab", b"b"])
    dfa = AutomatonBuilder().dfa(lit("ab")).materialize()
    rows, classes, expanded, accepting, _ = dfa.walk_tables()
    layout = vocab.trie.walk_layout
    words = np.zeros(1, dtype=np.int32)
    row = _row(dfa)
    node = np.array([1], dtype=np.int64)  # "b", a token
    with pytest.raises(ValueError, match="exit node out of range"):  # the root is no exit
        raw_follow(rows, classes, expanded, accepting, layout, np.array([vocab.trie.num_nodes], dtype=np.int64),
                   row, words, True)
    with pytest.raises(ValueError, match="sizes"):  # a start row over fewer than 256 bytes
        raw_follow(rows, classes, expanded, accepting, layout, node, row[:10], words, True)
    with pytest.raises(ValueError, match="out of range"):  # a state the table does not have
        raw_follow(rows, classes, expanded, accepting, layout, node, np.full(256, 99, dtype=np.int64), words, True)
    with pytest.raises(ValueError, match="token id"):  # a mask too short for the vocabulary
        raw_follow(rows, classes, expanded, accepting, layout, node, np.full(256, START, dtype=np.int64),
                   np.zeros(0, dtype=np.int32), True)
    with pytest.raises(ValueError, match="byte class"):
        raw_follow(rows, np.full(256, 1000, dtype=np.int32), expanded, accepting, layout, node, row, words, True)
