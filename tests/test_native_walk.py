"""The native trie walk (grammar/native_walk.py over _trie_walk.c) against per-token brute force:
on small vocabularies with lazy automata (rows built between rounds of the walk), on the real
129k vocabulary through the mask cache, and with malformed tables (an error, never a crash)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import (  # noqa: E402
    brute_force_allowed, deepseek_tokenizer, deepseek_vocab, node_prefixes, unpack_mask,
)

from formwork.grammar import Vocabulary, native_walk  # noqa: E402
from formwork.grammar._trie_walk import walk as raw_walk  # noqa: E402
from formwork.grammar.automaton import AutomatonBuilder  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.dfa import DEAD, START  # noqa: E402
from formwork.grammar.errors import GrammarBudgetError  # noqa: E402
from formwork.grammar.follow_exits import exit_seeds, exit_seeds_after  # noqa: E402
from formwork.grammar.ir import alt, lit, repeat, seq  # noqa: E402
from formwork.grammar.ir_chars import chars  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.native_walk import walk_into, walk_state  # noqa: E402
from formwork.grammar.slices import TokenSlice  # noqa: E402
from formwork.grammar.packed import unpack_token_ids  # noqa: E402
from formwork.grammar.token_mask import TokenMaskCache  # noqa: E402

ALPHABET = b'ab"{ 1'
PIECES = [lit("ab"), lit('"'), lit("{ "), chars([(0x61, 0x62)]), chars([(0x31, 0x31)]), lit("a1b")]


@st.composite
def regexes(draw, depth: int = 2):
    """Small IR terms over ALPHABET: literals, classes, sequences, alternations, repetitions."""
    if depth == 0:
        return draw(st.sampled_from(PIECES))
    sub = regexes(depth - 1)
    kind = draw(st.sampled_from(["leaf", "seq", "alt", "star", "bounded"]))
    if kind == "leaf":
        return draw(st.sampled_from(PIECES))
    if kind == "seq":
        return seq(draw(sub), draw(sub))
    if kind == "alt":
        return alt(draw(sub), draw(sub))
    low = draw(st.integers(0, 2))
    return repeat(draw(sub), low, None if kind == "star" else low + draw(st.integers(0, 3)))


tokens_strategy = st.lists(st.binary(min_size=1, max_size=9).map(lambda b: bytes(ALPHABET[x % 6] for x in b)),
                           min_size=1, max_size=80, unique=True)


def _counting_rounds(monkeypatch) -> list[int]:
    calls = [0]
    real = native_walk._walk

    def counted(*args):
        calls[0] += 1
        return real(*args)

    monkeypatch.setattr(native_walk, "_walk", counted)
    return calls


@settings(deadline=None, max_examples=60)
@given(tokens=tokens_strategy, term=regexes(), prefix=st.binary(max_size=4).map(
    lambda b: bytes(ALPHABET[x % 6] for x in b)))
def test_masks_and_exits_are_the_brute_force_ones(tokens, term, prefix):
    """Tokens = those whose every prefix stays alive; exits = children of live non-root nodes in an
    accepting state.  A fresh lazy automaton has no rows yet, so the walk runs in several rounds."""
    vocab = Vocabulary(tokens)
    dfa = AutomatonBuilder().dfa(term)
    state = dfa.walk(START, prefix)
    if state == DEAD:
        return
    words = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
    exits = walk_state(vocab.trie, dfa, state, words, want_exits=True)
    if dfa.lazy:  # the states the walk interned have their accepting flags
        assert dfa.accepting.tolist() == dfa._b.accepting_flags(0).tolist()
    want = {i for i, data in enumerate(tokens) if dfa.walk(state, data) != DEAD}
    assert set(unpack_token_ids(words).tolist()) == want
    prefixes = node_prefixes(vocab.trie)
    want_exits = {p for p in prefixes.values()
                  if len(p) > 1 and dfa.walk(state, p[:-1]) != DEAD and dfa.accepting[dfa.walk(state, p[:-1])]}
    assert {prefixes[n] for n in exits.tolist()} == want_exits
    eager = dfa.materialize()  # the same language over an eager table
    eager_words = np.zeros_like(words)
    walk_state(vocab.trie, eager, eager.walk(START, prefix), eager_words)
    assert np.array_equal(eager_words, words)


def _exit_case(tokens, term, prefix):
    """(vocabulary, automaton of `term`, the state after `prefix`) of an exit-seed example."""
    vocab = Vocabulary(tokens)
    dfa = AutomatonBuilder().dfa(term)
    return vocab, dfa, dfa.walk(START, prefix)


def _brute_force_seeds(prefixes: dict[int, bytes], dfa, state: int, byte: int) -> list[int]:
    """The trie nodes spelling `byte` right after a non-empty prefix the automaton accepts from `state`."""
    return [n for n, p in prefixes.items() if len(p) > 1 and p[-1] == byte
            and dfa.walk(state, p[:-1]) != DEAD and dfa.accepting[dfa.walk(state, p[:-1])]]


@settings(deadline=None, max_examples=60)
@given(tokens=tokens_strategy, term=regexes(), byte=st.sampled_from(ALPHABET),
       prefix=st.binary(max_size=3).map(lambda b: bytes(ALPHABET[x % 6] for x in b)))
def test_exit_seeds_are_the_brute_force_ones(tokens, term, byte, prefix):
    """Exit seeds = trie nodes spelling `byte` right after a non-empty prefix that the automaton
    accepts from the state; found by the native walk of the pruned follow trie."""
    vocab, dfa, state = _exit_case(tokens, term, prefix)
    if state == DEAD:
        return
    prefixes = node_prefixes(vocab.trie)
    want = {prefixes[n] for n in _brute_force_seeds(prefixes, dfa, state, byte)}
    assert {prefixes[n] for n in exit_seeds(vocab.trie, dfa, state, byte)} == want


@settings(deadline=None, max_examples=60)
@given(tokens=tokens_strategy, term=regexes(), follow=st.sets(st.sampled_from(ALPHABET), min_size=1),
       prefix=st.binary(max_size=3).map(lambda b: bytes(ALPHABET[x % 6] for x in b)))
def test_exit_seeds_after_walk_every_follow_byte_at_once(tokens, term, follow, prefix):
    """One walk of the pruned trie of several follow bytes gives, per byte (ascending, only
    those with seeds), the brute-force seeds as ascending trie nodes: what `exit_seeds` gives."""
    vocab, dfa, state = _exit_case(tokens, term, prefix)
    if state == DEAD:
        return
    prefixes = node_prefixes(vocab.trie)
    want = []
    for byte in sorted(follow):
        seeds = tuple(sorted(_brute_force_seeds(prefixes, dfa, state, byte)))
        if seeds:
            want.append((byte, seeds))
            assert exit_seeds(vocab.trie, dfa, state, byte) == seeds
    assert exit_seeds_after(vocab.trie, dfa, state, bytes(sorted(follow))) == tuple(want)


def test_a_lazy_automaton_builds_its_rows_inside_the_walk(monkeypatch):
    """The subset core builds missing rows in place: one round, and the rows are recorded."""
    vocab = Vocabulary([b"abc", b"abcd", b"ab", b"x", b"abd"])
    rounds = _counting_rounds(monkeypatch)
    dfa = AutomatonBuilder().dfa(seq(lit("abcd"), repeat(lit("x"), 0, None)))
    words = np.zeros(1, dtype=np.int32)
    walk_state(vocab.trie, dfa, START, words)
    assert set(unpack_token_ids(words).tolist()) == {0, 1, 2}
    assert rounds[0] == 1
    assert dfa.walk(START, b"abcd") != DEAD and dfa.accepts(b"abcdxx") and not dfa.accepts(b"abc")


def test_states_beyond_the_arrays_are_walked_in_rounds(monkeypatch):
    """States interned past the end of the row arrays are handed back; the arrays grow and the
    walk goes on from where it stopped."""
    vocab = Vocabulary([b"a" * 150, b"a" * 70, b"a" * 151, b"b"])
    rounds = _counting_rounds(monkeypatch)
    dfa = AutomatonBuilder().dfa(lit("a" * 150))
    words = np.zeros(1, dtype=np.int32)
    walk_state(vocab.trie, dfa, START, words)
    assert set(unpack_token_ids(words).tolist()) == {0, 1}
    assert rounds[0] > 1
    assert dfa.accepting.tolist() == dfa._b.accepting_flags(0).tolist() and dfa.accepting.sum() == 1


def test_a_walk_out_of_time_stops_building_rows():
    dfa = AutomatonBuilder().dfa(repeat(alt(lit("ab"), lit("abc")), 0, None))
    vocab = Vocabulary([b"ab" * 20, b"abc" * 10])
    with pytest.raises(GrammarBudgetError, match="step budget"):
        walk_state(vocab.trie, dfa, START, np.zeros(1, dtype=np.int32), deadline=time.perf_counter())


def test_seeds_below_the_root_mark_their_own_tokens():
    tokens = [b"a", b"ab", b"abc", b"b"]
    vocab = Vocabulary(tokens)
    dfa = AutomatonBuilder().dfa(repeat(lit("b"), 0, None))
    node_a = vocab.trie.token_node[0]
    words = np.zeros(1, dtype=np.int32)
    walk_into(vocab.trie, dfa, np.array([node_a]), np.array([START]), words)  # "a" taken as read
    assert set(unpack_token_ids(words).tolist()) == {0, 1}  # "a" itself and "ab"; "abc" dies at c


@pytest.mark.parametrize("use_lexemes", [True, False])
def test_real_vocabulary_masks_are_the_brute_force_ones(use_lexemes):
    """Along one instance, through the mask cache (slices, lexeme exits), on the 129k vocabulary."""
    vocab = deepseek_vocab()
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
                                               "n": {"type": "integer", "minimum": -50}},
              "required": ["name", "n"], "additionalProperties": False}
    cache = TokenMaskCache(vocab, use_lexemes=use_lexemes)
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    matcher = grammar.matcher()
    tokens = deepseek_tokenizer().encode(json.dumps({"name": "Ada L", "n": -42}), add_special_tokens=False).ids
    for token in tokens[:6]:  # brute force costs ~0.5 s per state
        got = unpack_mask(cache.mask(grammar.dfa, matcher._state), vocab.vocab_size)
        assert (got == brute_force_allowed(vocab, grammar.dfa, matcher._state)).all()
        assert matcher.accept_token(token)


def test_malformed_tables_are_an_error_not_a_crash():
    vocab = Vocabulary([b"ab", b"b"])
    dfa = AutomatonBuilder().dfa(lit("ab")).materialize()
    rows, classes, expanded, accepting, _ = dfa.walk_tables()
    layout = vocab.trie.walk_layout
    words = np.zeros(1, dtype=np.int32)
    root = np.array([vocab.trie.num_nodes], dtype=np.int64)
    with pytest.raises(ValueError, match="out of range"):  # a state the table does not have
        raw_walk(rows, classes, expanded, accepting, layout, root, np.array([99], dtype=np.int64), words, False)
    with pytest.raises(ValueError, match="byte class"):
        raw_walk(rows, np.full(256, 1000, dtype=np.int32), expanded, accepting, layout, root,
                 np.array([START], dtype=np.int64), words, False)
    with pytest.raises(ValueError, match="sizes"):
        raw_walk(rows, classes[:10], expanded, accepting, layout, root, np.array([START], dtype=np.int64),
                 words, False)
    with pytest.raises(ValueError, match="token id"):  # a mask too short for the vocabulary
        raw_walk(rows, classes, expanded, accepting, layout, root, np.array([START], dtype=np.int64),
                 np.zeros(0, dtype=np.int32), False)
    with pytest.raises(TypeError, match="SubsetCore"):
        raw_walk(rows, classes, expanded, accepting, layout, root, np.array([START], dtype=np.int64),
                 words, False, "not a core")
    lazy = AutomatonBuilder().dfa(lit("ab"))
    rows, classes, expanded, accepting, core = lazy.walk_tables()
    with pytest.raises(ValueError, match="writable"):  # the core builds rows in place
        raw_walk(rows, classes, expanded, accepting.copy().tobytes(), layout, root,
                 np.array([START], dtype=np.int64), words, False, core)


def _covers_reference(token_slice: TokenSlice, dfa, state: int) -> bool:
    """The slice coverage search in plain Python, byte by byte."""
    table = token_slice.dfa.table
    frontier = {(START, state)}
    seen = set(frontier)
    for _ in range(token_slice.max_len):
        found = set()
        for u, q in frontier:
            row = dfa.row(q)
            for byte in range(256):
                v = int(table[u, byte])
                if v == DEAD:
                    continue
                if row[byte] == DEAD:
                    return False
                if (v, int(row[byte])) not in seen:
                    seen.add((v, int(row[byte])))
                    found.add((v, int(row[byte])))
        if not found:
            return True
        frontier = found
    return True


@settings(deadline=None, max_examples=60)
@given(tokens=tokens_strategy, term=regexes(), prefix=st.binary(max_size=4).map(
    lambda b: bytes(ALPHABET[x % 6] for x in b)))
def test_slice_coverage_is_the_reference_search(tokens, term, prefix):
    """`TokenSlice.covers` (C, building a fresh lazy automaton's rows in place) equals the
    Python search, and when it says yes every member of the slice is allowed."""
    vocab = Vocabulary(tokens)
    token_slice = TokenSlice(vocab, [(0x20, 0x21), (0x31, 0x31), (0x61, 0x7B)])  # no '"'
    dfa = AutomatonBuilder().dfa(term)
    state = dfa.walk(START, prefix)
    if state == DEAD:
        return
    got = token_slice.covers(dfa, state)
    assert got == _covers_reference(token_slice, dfa, state)
    if got:
        assert all(dfa.walk(state, tokens[i]) != DEAD for i in token_slice.member_ids.tolist())


def test_slice_coverage_of_open_text():
    vocab = Vocabulary([b"ab", b"a b", b'"', b"{"])
    token_slice = TokenSlice(vocab, [(0x20, 0x21), (0x23, 0x7E)])
    anything = AutomatonBuilder().dfa(repeat(chars([(0x20, 0x7E)]), 0, None))
    letters = AutomatonBuilder().dfa(repeat(chars([(0x61, 0x7A)]), 0, None))
    assert token_slice.covers(anything, START) and not token_slice.covers(letters, START)
