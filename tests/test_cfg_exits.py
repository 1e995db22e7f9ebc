"""Exits of the native walk (ascending, each once, from many seeds), their seeds into a next
terminal, and continuations kept as the nonzero words of packed masks: each against a
brute-force reference."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_vocab, node_prefixes  # noqa: E402

from formwork.grammar import Vocabulary, terminal_exits  # noqa: E402
from formwork.grammar._packed import nonzero_words, or_words  # noqa: E402
from formwork.grammar._trie_walk import exit_bytes, walk as raw_walk  # noqa: E402
from formwork.grammar.automaton import AutomatonBuilder  # noqa: E402
from formwork.grammar.cfg.continuations import Continuation, continuation  # noqa: E402
from formwork.grammar.dfa import DEAD, START  # noqa: E402
from formwork.grammar.ir import lit, repeat, seq  # noqa: E402
from formwork.grammar.ir_chars import chars  # noqa: E402
from formwork.grammar.native_walk import walk_state  # noqa: E402
from formwork.grammar.packed import unpack_token_ids  # noqa: E402
from formwork.grammar.terminal_exits import Exits, ascending_once, interned_exits  # noqa: E402

ALPHABET = b"ab 1"
WORD = repeat(chars([(0x61, 0x62)]), 1, None)  # [ab]+: accepting almost everywhere, many exits
TERMS = [WORD, seq(lit("a"), repeat(lit("b"), 0, None)), lit("ab"), seq(WORD, lit(" ")), repeat(lit(" 1"), 1, 3)]
tokens_strategy = st.lists(st.binary(min_size=1, max_size=7).map(lambda b: bytes(ALPHABET[x % 4] for x in b)),
                           min_size=1, max_size=60, unique=True)


def _exits_from(tokens: list[bytes], dfa, seeds: list[tuple[int, int]], prefixes: dict[int, bytes],
                root: int) -> set[int]:
    """Children of live non-root nodes reached in an accepting state below the seeds."""
    by_prefix = {p: n for n, p in prefixes.items()}
    out = set()
    for node, state in seeds:
        start = prefixes.get(node, b"") if node != root else b""
        for n, p in prefixes.items():
            if len(p) > len(start) + (node == root) and p.startswith(start):
                q = dfa.walk(state, p[len(start):-1])
                if q != DEAD and dfa.accepting[q] and by_prefix.get(p[:-1], root) != root:
                    out.add(n)
    return out


@settings(deadline=None, max_examples=50)
@given(tokens=tokens_strategy, term=st.sampled_from(TERMS), picks=st.lists(st.integers(0, 10 ** 6), max_size=8),
       states=st.lists(st.integers(0, 10 ** 6), min_size=8, max_size=8))
def test_walk_exits_from_many_seeds_are_ascending_and_distinct(tokens, term, picks, states):
    """Seeds in any order, a node repeated in several states: the exits are still sorted and each
    node comes once, and they are the brute-force ones."""
    vocab = Vocabulary(tokens)
    trie = vocab.trie
    dfa = AutomatonBuilder().dfa(term).materialize()
    prefixes = node_prefixes(trie)
    nodes = sorted(prefixes)
    seeds = [(nodes[p % len(nodes)], 1 + s % (dfa.num_states - 1)) for p, s in zip(picks, states)]
    if not seeds:
        seeds = [(trie.num_nodes, START)]
    rows, class_of_byte, expanded, accepting, core = dfa.walk_tables()
    words = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    seed_nodes = np.array([n for n, _ in seeds], dtype=np.int64)
    seed_states = np.array([s for _, s in seeds], dtype=np.int64)
    _, raw = raw_walk(rows, class_of_byte, expanded, accepting, trie.walk_layout, seed_nodes, seed_states,
                      words, True, core, -1.0)
    exits = np.frombuffer(raw, dtype=np.int64)
    assert np.all(np.diff(exits) > 0)
    assert set(exits.tolist()) == _exits_from(tokens, dfa, seeds, prefixes, trie.num_nodes)
    keep = sum(1 << b for b in ALPHABET[::2]).to_bytes(32, "little")  # exits spelling these bytes only
    _, kept = raw_walk(rows, class_of_byte, expanded, accepting, trie.walk_layout, seed_nodes, seed_states,
                       np.zeros_like(words), True, core, -1.0, keep)
    want = [n for n in exits.tolist() if prefixes[n][-1] in ALPHABET[::2]]
    assert np.frombuffer(kept, dtype=np.int64).tolist() == want
    with pytest.raises(ValueError, match="32-byte"):
        raw_walk(rows, class_of_byte, expanded, accepting, trie.walk_layout, seed_nodes, seed_states,
                 words, True, core, -1.0, keep[:8])


@given(st.lists(st.integers(0, 50), max_size=40))
def test_ascending_once_is_sorted_set(values):
    assert ascending_once(np.array(values, dtype=np.int64)).tolist() == sorted(set(values))


@settings(deadline=None, max_examples=40)
@given(tokens=tokens_strategy, term=st.sampled_from(TERMS), after=st.sampled_from(TERMS))
def test_seeds_and_continuations_are_the_brute_force_ones(tokens, term, after):
    """From the exits of `term`, the seeds into `after` are the exit nodes whose byte starts it
    (with the state that byte leads to), and the continuation's packed words are the tokens that
    end `term` part way and stay alive inside `after`."""
    vocab = Vocabulary(tokens)
    trie = vocab.trie
    first, second = AutomatonBuilder().dfa(term), AutomatonBuilder().dfa(after)
    words = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    exits = interned_exits(trie, walk_state(trie, first, START, words, want_exits=True))
    prefixes = node_prefixes(trie)
    assert exits.first_bytes == sum(1 << b for b in {prefixes[n][-1] for n in exits.node.tolist()})
    nodes, states = exits.seeds(second.row(START))
    want = {(n, second.walk(START, prefixes[n][-1:])) for n in exits.node.tolist()} - {
        (n, DEAD) for n in exits.node.tolist()}
    assert set(zip(nodes.tolist(), states.tolist())) == want
    step = continuation(exits, second, None)
    got = np.zeros_like(words)
    step.add_to(got)
    ending = {p for p in prefixes.values() if any(
        first.accepting[q] for k in range(1, len(p)) if (q := first.walk(START, p[:k])) != DEAD)}
    want_ids = {i for i, data in enumerate(tokens) if any(
        (q := first.walk(START, data[:k])) != DEAD and first.accepting[q] and second.walk(START, data[k:]) != DEAD
        for k in range(1, len(data)))}
    assert ending >= {tokens[i] for i in want_ids}
    assert set(unpack_token_ids(got).tolist()) == want_ids


def test_continuation_words_or_into_a_mask():
    words = np.zeros(4, dtype=np.int32)
    words[1], words[3] = 5, -(2 ** 31)
    step = Continuation.of_words(words, Exits(Vocabulary([b"a"]).trie, np.zeros(0, dtype=np.int64)))
    target = np.zeros(4, dtype=np.int32)
    target[1] = 2
    step.add_to(target)
    assert target.tolist() == [0, 7, 0, -(2 ** 31)]
    assert step.at.tolist() == [1, 3]


@settings(deadline=None, max_examples=60)
@given(tokens=tokens_strategy, picks=st.lists(st.integers(0, 10 ** 6), max_size=30),
       live=st.lists(st.sampled_from(ALPHABET), max_size=4), state=st.integers(1, 9))
def test_seeds_byte_by_byte_are_the_gathered_ones(tokens, picks, live, state):
    """Many exits and few live bytes: the seeds are looked up byte by byte, the same pairs."""
    trie = Vocabulary(tokens).trie
    nodes = np.array([p % trie.num_nodes for p in picks], dtype=np.int64)
    exits = Exits(trie, nodes)
    row = np.zeros(256, dtype=np.int32)
    row[list(live)] = state
    want = {(n, state) for n, b in zip(exits.node.tolist(), exits.byte.tolist()) if b in live}
    saved = terminal_exits._MANY_EXITS
    for many in (saved, 0):
        terminal_exits._MANY_EXITS = many
        try:
            got_nodes, got_states = exits.seeds(row)
        finally:
            terminal_exits._MANY_EXITS = saved
        assert np.all(np.diff(got_nodes) > 0)
        assert set(zip(got_nodes.tolist(), got_states.tolist())) == want


@given(st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1) | st.just(0), max_size=80))
def test_nonzero_words_are_numpys(values):
    words = np.array(values, dtype=np.int32)
    at, bits = nonzero_words(words)
    assert np.frombuffer(at, dtype=np.int64).tolist() == np.flatnonzero(words).tolist()
    assert np.frombuffer(bits, dtype=np.int32).tolist() == words[words != 0].tolist()


def test_nonzero_words_refuse_a_partial_word():
    with pytest.raises(ValueError):
        nonzero_words(b"\x01\x02\x03")


@given(st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), min_size=1, max_size=40), st.data())
def test_or_words_is_the_fancy_indexed_or(values, data):
    base = np.array(values, dtype=np.int32)
    at = np.array(sorted(data.draw(st.sets(st.integers(0, len(values) - 1)))), dtype=np.int64)
    bits = np.array(data.draw(st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), min_size=len(at), max_size=len(at))),
                    dtype=np.int32)
    want = base.copy()
    want[at] |= bits
    got = base.copy()
    or_words(got, at, bits)
    assert np.array_equal(got, want)


def test_or_words_refuses_bad_input():
    words = np.zeros(4, dtype=np.int32)
    with pytest.raises(ValueError):
        or_words(words, np.array([4], dtype=np.int64), np.array([1], dtype=np.int32))  # past the mask
    with pytest.raises(ValueError):
        or_words(words, np.array([-1], dtype=np.int64), np.array([1], dtype=np.int32))
    with pytest.raises(ValueError):
        or_words(words, np.array([0, 1], dtype=np.int64), np.array([1], dtype=np.int32))  # sizes differ
    frozen = np.zeros(4, dtype=np.int32)
    frozen.flags.writeable = False
    with pytest.raises((TypeError, BufferError, ValueError)):
        or_words(frozen, np.array([0], dtype=np.int64), np.array([1], dtype=np.int32))
    assert not words.any()


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 10 ** 9), max_size=40))
def test_exit_bytes_are_the_bytes_the_nodes_spell(picks):
    """`_trie_walk.exit_bytes` (what `Exits` reads its bytes with) against numpy, and its checks."""
    trie = deepseek_vocab().trie
    nodes = np.array(sorted({p % trie.num_nodes for p in picks}), dtype=np.int64)
    spelled, first = exit_bytes(trie.walk_layout, nodes)
    want = trie.flat_arrays[2][nodes]
    assert np.frombuffer(spelled, dtype=np.uint8).tolist() == want.tolist()
    assert int.from_bytes(first, "little") == sum(1 << int(b) for b in set(want.tolist()))
    with pytest.raises(ValueError, match="out of range"):
        exit_bytes(trie.walk_layout, np.array([trie.num_nodes], dtype=np.int64))  # the root spells nothing
    with pytest.raises(ValueError, match="not a trie layout"):
        exit_bytes(trie.walk_layout[:16], nodes)
