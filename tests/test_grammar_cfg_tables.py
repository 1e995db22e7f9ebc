"""CFG mask building blocks: terminal-state walks, language keys, slice tables, continuations."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import node_prefixes, walk_token_ids  # noqa: E402
from conftest_grammar_cfg import JSON_LARK  # noqa: E402

from formwork.grammar import GrammarCompiler, Vocabulary  # noqa: E402
from formwork.grammar.automaton import AutomatonBuilder  # noqa: E402
from formwork.grammar.cfg.terminal_tables import language_key, terminal_table  # noqa: E402
from formwork.grammar.native_walk import walk_state  # noqa: E402
from formwork.grammar.dfa import DEAD, START  # noqa: E402
from formwork.grammar.ir import alt, lit, repeat, seq  # noqa: E402
from formwork.grammar.ir_chars import chars  # noqa: E402
from formwork.grammar.slices import JSON_STRING_CHARS  # noqa: E402
from formwork.grammar.packed import pack_token_ids, unpack_token_ids  # noqa: E402
from formwork.grammar.token_mask import TokenMaskCache  # noqa: E402

WS = repeat(chars([(9, 10), (13, 13), (32, 32)]), 1, None)
NAME = seq(chars([(0x5F, 0x5F), (0x61, 0x7A)]), repeat(chars([(0x30, 0x39), (0x5F, 0x5F), (0x61, 0x7A)]), 0, None))
STRING = seq(lit('"'), repeat(alt(chars([(0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)]),
                                  seq(lit("\\"), chars([(0x22, 0x22), (0x5C, 0x5C), (0x6E, 0x6E)]))), 0, None),
             lit('"'))
TERMINALS = {"ws": WS, "name": NAME, "string": STRING}
PREFIXES = [b"", b" ", b"a", b"ab", b'"', b'"a', b'"\\', b'"a"']


ALPHABETS = [b" \n", b"a_1", b'a"\\', b" a_1\"\\\n'"]  # narrow ones make long runs (deep single paths)


@st.composite
def vocabularies(draw) -> list[bytes]:
    alphabet = draw(st.sampled_from(ALPHABETS))
    spell = st.binary(min_size=1, max_size=14).map(lambda b: bytes(alphabet[x % len(alphabet)] for x in b))
    return draw(st.lists(spell, min_size=1, max_size=60, unique=True))


@settings(deadline=None, max_examples=40)
@given(tokens=vocabularies())
def test_terminal_walk_is_the_brute_force_walk(tokens):
    """Tokens inside = every prefix alive from the state; exit children = prefix + one byte where a
    non-empty prefix takes the terminal to acceptance (ending before any byte is the boundary
    hypothesis that the configuration holds beside an accepting state)."""
    vocab = Vocabulary(tokens)
    trie = vocab.trie
    prefixes = node_prefixes(trie)
    for name, node in TERMINALS.items():
        dfa = AutomatonBuilder().dfa(node)
        for start in {dfa.walk(START, p) for p in PREFIXES} - {DEAD}:
            want_inside = {i for i, data in enumerate(tokens) if dfa.walk(start, data) != DEAD}
            want_exits = {p for p in prefixes.values()
                          if len(p) > 1 and dfa.walk(start, p[:-1]) != DEAD and dfa.accepting[dfa.walk(start, p[:-1])]}
            words = np.zeros((vocab.vocab_size + 31) // 32, dtype=np.int32)
            exits = walk_state(trie, dfa, start, words, want_exits=True)
            assert set(unpack_token_ids(words).tolist()) == want_inside, name
            assert {prefixes[n] for n in exits.tolist()} == want_exits, name


def test_language_key_names_the_language_not_the_automaton_state():
    body = chars([(0, 0x26), (0x28, 0x10FFFF)])
    # after "a" and after "bx" the rest is body* "'" in both branches, from different NFA states
    quoted = AutomatonBuilder().dfa(alt(seq(lit("a"), repeat(body, 0, None), lit("'")),
                                        seq(lit("b"), repeat(body, 1, None), lit("'"))))
    after_a, after_bx = quoted.walk(START, b"a"), quoted.walk(START, b"bx\xc3\xa9")
    assert after_a != after_bx and language_key(quoted, after_a) == language_key(quoted, after_bx)
    assert language_key(quoted, START) != language_key(quoted, after_a)
    assert language_key(quoted, quoted.walk(START, b"b")) != language_key(quoted, after_a)  # body+ "'"
    ws = AutomatonBuilder().dfa(WS)
    assert language_key(ws, ws.walk(START, b" ")) == language_key(ws, ws.walk(START, b"  \n"))
    assert language_key(ws, START) != language_key(ws, ws.walk(START, b" "))  # ws+ vs ws*
    after_comma = AutomatonBuilder().dfa(seq(lit(","), WS))
    assert language_key(after_comma, after_comma.walk(START, b", ")) == language_key(ws, ws.walk(START, b" "))


def test_packing_few_or_many_ids_equals_the_scatter():
    """`pack_token_ids` scatters few ids and goes through a flag array for many: both as the
    bit-by-bit reference (and `unpack_token_ids` gives the ids back)."""
    rng = np.random.default_rng(7)
    for count in (0, 3, 5000):
        ids = rng.integers(0, 1000, count)
        reference = np.zeros((1000 + 31) // 32, dtype=np.uint32)
        for i in ids.tolist():
            reference[i >> 5] |= np.uint32(1 << (i & 31))
        assert np.array_equal(pack_token_ids(ids, 1000), reference.view(np.int32))
        assert np.array_equal(unpack_token_ids(pack_token_ids(ids, 1000)), np.unique(ids))


def test_terminals_that_slice_tokens_can_finish_walk_the_whole_trie():
    """`x` then string characters: every slice token stays alive, but may end the terminal part way,
    so the exits come from the whole trie (the slice's rest trie would miss `ab` and `a b`)."""
    tokens = [b"x", b"ab", b"a b", b"xab", b'"', b"\n"]
    vocab = Vocabulary(tokens + [None], stop_token_ids=[len(tokens)])
    dfa = AutomatonBuilder().dfa(seq(lit("x"), repeat(chars(JSON_STRING_CHARS), 1, None)))
    after_x = dfa.walk(START, b"x")
    table = terminal_table(TokenMaskCache(vocab), dfa, after_x)
    assert table.exits.trie is vocab.trie
    prefixes = node_prefixes(vocab.trie)
    exits = {prefixes[n] for n in table.exits.node.tolist()}
    assert exits == {b"ab", b"a ", b"a b", b"xa", b"xab"}  # one byte past a prefix the terminal may end at
    want = {i for i, data in enumerate(tokens) if dfa.walk(after_x, data) != DEAD}
    got = set(np.flatnonzero(np.unpackbits(table.inside.view(np.uint8), bitorder="little")).tolist())
    assert got == want


def test_terminals_that_end_alike_share_exits_and_continuations():
    tokens = [b" ", b" a", b" ab", b"AS", b"FROM", b"a", b" (", b"x "]
    cache = TokenMaskCache(Vocabulary(tokens))
    space, either = AutomatonBuilder().dfa(lit(" ")), AutomatonBuilder().dfa(alt(lit(" "), lit("q ")))
    one = terminal_table(cache, space, START)
    other = terminal_table(cache, either, START)  # another language, but no token starts with "q"
    assert one is not other and one.exits is other.exits  # both end after a space: children of " "
    assert len(one.exits.node) == 2  # " a" and " ("


def test_string_body_tables_use_the_slice(vocab):
    """A JSON string body takes its inside mask from the sliced cache and its exits from the trie
    of the tokens outside the slice; both agree with plain walks of the whole trie."""
    cache = TokenMaskCache(vocab)
    dfa = AutomatonBuilder().dfa(STRING)
    body = dfa.walk(START, b'"ab')
    table = terminal_table(cache, dfa, body)
    assert table.exits.trie is not vocab.trie
    inside = walk_token_ids(vocab.trie, dfa, body)
    assert np.array_equal(table.inside, pack_token_ids(inside, vocab.vocab_size))
    whole = np.zeros_like(table.inside)
    exits = walk_state(vocab.trie, dfa, body, whole, want_exits=True)
    ending = np.flatnonzero([data is not None and b'"' in data for data in vocab.token_bytes])
    trie = vocab.trie
    through = np.concatenate([trie.end_tokens[trie.end_ptr[n]:trie.end_ptr[n + 1]] for n in exits.tolist()])
    rest_ids = {i for i, data in enumerate(vocab.token_bytes) if data is not None} - set(
        cache.token_slice.member_ids.tolist())
    assert set(through.tolist()) <= set(ending.tolist()) & rest_ids  # exits only through a closing quote
    assert len(table.exits.node) > 0


SMALL_TOKENS = [bytes([c]) for c in b' \n{}[]:,"-.0123456789abcdefghijklmnopqrstuvwxyzE+\\'] + [
    b'{"', b'":', b'",', b'"}', b'},', b'}}', b'],', b'[{', b'": ', b', "', b'  ', b'    ', b'\n  ', b'",\n',
    b'true', b'null', b'false', b'12', b'.5', b'e+', b'"a', b'b"', b'"},{"', b'1]', b'0}', b' [', b' {"']


def greedy_tokens(vocab: Vocabulary, text: bytes) -> list[int]:
    index = {data: i for i, data in enumerate(vocab.token_bytes) if data is not None}
    out, i = [], 0
    while i < len(text):
        j = max(k for k in range(i + 1, len(text) + 1) if text[i:k] in index)
        out.append(index[text[i:j]])
        i = j
    return out


@pytest.mark.parametrize("text", [b'{"a": [1, -2.5e+3, {"b": null}], "c": "x\\"y"}',
                                  b'[\n  {"k": [true, false]},\n  {}\n]'])
def test_continuation_masks_equal_the_full_walk_on_a_small_vocabulary(text):
    """Tokens spanning several terminals (`"},{"`, `",\\n`) go through chains of continuations;
    the split mask still equals one walk of the configuration automaton at every step."""
    vocab = Vocabulary(SMALL_TOKENS + [None], stop_token_ids=[len(SMALL_TOKENS)])
    g = GrammarCompiler(vocab, cache_enabled=False).compile_ebnf(JSON_LARK)
    state = START
    for token in greedy_tokens(vocab, text):
        full = walk_token_ids(vocab.trie, g.dfa, state)
        assert np.array_equal(g.mask_cache.mask(g.dfa, state), pack_token_ids(full, vocab.vocab_size))
        state = g.dfa.walk(state, vocab.token_bytes[token])
        assert state != DEAD
