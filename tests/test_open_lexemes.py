"""Open-ended lexemes (object keys other than the declared names, string contents) promise that any
string characters may follow; the token-mask cache then takes the whole string-character slice
without searching.  The promise is checked here against that search, state by state."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import brute_force_allowed, unpack_mask  # noqa: E402

from formwork.grammar import Vocabulary  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.dfa import DEAD  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.slices import JSON_STRING_CHARS, TokenSlice  # noqa: E402
from formwork.grammar.token_mask import TokenMaskCache  # noqa: E402

TOKENS = [b"a", b"ab", b"abc", b"name", b"n", b"x", b'"', b'":', b" ", b"\\", b"\\n", b"1", b"{", b"}",
          b",", b"\xc3\xa9", b"zzzzzzzz"]
NAMES = ["a", "ab", "name", "nam", "x1"]
SCHEMA = {"type": "object", "properties": {n: {"type": "integer"} for n in NAMES}}


def _grammar():
    vocab = Vocabulary(TOKENS)
    return vocab, compile_json_schema(SCHEMA, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))


@settings(deadline=None, max_examples=80)
@given(key=st.text(alphabet="anmeb1xz\"\\é", max_size=6))
def test_states_in_an_open_key_admit_the_whole_slice(key):
    vocab, grammar = _grammar()
    token_slice = TokenSlice(vocab, JSON_STRING_CHARS)
    dfa = grammar.dfa
    text = '{"a": 1, "' + json.dumps(key)[1:-1]
    state = dfa.walk(1, text.encode())
    if state == DEAD:
        return
    if dfa.in_open_lexeme(state):
        assert token_slice.covers(dfa, state)


def test_a_key_start_of_an_open_object_is_in_an_open_lexeme():
    """The promise is used where it matters: at the start of a key and part way through one
    that spells a prefix of a declared name (both also hold declared names' states)."""
    _, grammar = _grammar()
    dfa = grammar.dfa
    for text in ('{"', '{"a": 1, "', '{"a": 1, "na', '{"a": 1, "zz'):
        assert dfa.in_open_lexeme(dfa.walk(1, text.encode())), text
    assert not dfa.in_open_lexeme(dfa.walk(1, b'{"a": 1'))  # between members


def test_closed_objects_have_no_open_lexeme_at_a_key():
    vocab = Vocabulary(TOKENS)
    closed = dict(SCHEMA, additionalProperties=False)
    grammar = compile_json_schema(closed, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    assert not grammar.dfa.in_open_lexeme(grammar.dfa.walk(1, b'{"'))


WIDE_TOKENS = TOKENS + [b"abcdefghijklmnopqrstuvwxyz", b"\xc3", b"\xa9", b"a\xc3", b'a"', b'x":', b'"}', b"\\u00",
                        b"\x01", b'", "', b"\xe2\x82"]


@settings(deadline=None, max_examples=60)
@given(key=st.text(alphabet="anmeb1xz\"\\é", max_size=6))
def test_masks_in_open_keys_are_the_brute_force_ones(key):
    """In an open-ended lexeme the mask takes every token that strings of string characters start
    with (long ones and partial characters too) and walks only the others."""
    vocab = Vocabulary(WIDE_TOKENS + [None], stop_token_ids=[len(WIDE_TOKENS)])
    grammar = compile_json_schema(SCHEMA, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    dfa = grammar.dfa
    state = dfa.walk(1, ('{"a": 1, "' + json.dumps(key)[1:-1]).encode())
    if state == DEAD:
        return
    assert dfa.in_open_lexeme(state)
    got = unpack_mask(TokenMaskCache(vocab).mask(dfa, state), vocab.vocab_size)
    assert (got == brute_force_allowed(vocab, dfa, state)).all()
