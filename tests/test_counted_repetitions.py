"""Bounded repetitions counted over their item: a string under maxLength costs the NFA its
character's states whatever the bound, with a pattern or format a product counted the same way
(`counted_dfa.py`), and both accept exactly what the schema allows."""
from __future__ import annotations

import json

import jsonschema
import numpy as np
from hypothesis import given, settings, strategies as st

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.compiler import GrammarCompiler
from formwork.grammar.counted_dfa import CountedDFA
from formwork.grammar.dfa import DFA
from formwork.grammar.errors import EmptyLanguageError
from formwork.grammar.ir import And, Repeat, lit, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema import compile_json_schema
from formwork.grammar.vocabulary import Vocabulary

BYTES = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])
#: a few multi-byte tokens too, so that a mask spans several characters of a string
TOKENS = Vocabulary([bytes([b]) for b in range(256)] + [b"ab", b"abcd", b'a"', b'"}', "é".encode(), b"\\n", None],
                    stop_token_ids=[262])


def _compile(schema: dict, vocab: Vocabulary = BYTES):
    return compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))


def test_a_100000_character_string_compiles_under_the_default_budget() -> None:
    grammar = _compile({"type": "string", "maxLength": 100_000})
    nfa = grammar.dfa.nfa
    assert nfa.num_states < 20 and nfa.total_states > 100_000  # the bound is numbers, not states
    m = grammar.matcher()
    assert m.accept_string('"' + "a" * 100_000)
    assert not m.accept_string("a")  # the 100,001st character
    assert m.accept_string('"') and m.can_terminate()
    assert grammar.dfa._b.core.materialised()[0] - grammar.dfa._b.core.materialised()[1] < 20


def test_characters_count_not_bytes() -> None:
    grammar = _compile({"type": "string", "minLength": 3, "maxLength": 5000})
    m = grammar.matcher()
    assert m.accept_string('"' + "日" * 2999 + "\\n" + "é" * 2000)
    assert not m.accept_string("x")
    assert m.accept_string('"') and m.can_terminate()
    short = grammar.matcher()
    assert short.accept_string('"é\\t') and not short.accept_string('"')


def _mask_is_exact(grammar, m, consumed: bytes) -> bool:
    """Every token is allowed exactly when a matcher that read `consumed` (`m`'s input) accepts
    its bytes next (a stop token exactly when the document can end)."""
    words = m.next_token_mask()
    allowed = np.unpackbits(words.view(np.uint8), bitorder="little")[: grammar.vocab.vocab_size].astype(bool)
    for token, text in enumerate(grammar.vocab.token_bytes):
        if text is None:
            want = m.can_terminate() and token in grammar.vocab.stop_token_ids
        else:
            probe = grammar.matcher()
            assert probe.accept_string(consumed)
            want = probe.accept_string(text)
        if bool(allowed[token]) != want:
            return False
    return True


STRINGS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@settings(deadline=None, max_examples=120)
@given(STRINGS, st.integers(0, 40), st.one_of(st.integers(0, 60), st.integers(250, 300), st.just(100_000)))
def test_bounded_strings_accept_what_jsonschema_validates(text: str, low: int, high: int) -> None:
    schema = {"type": "string", "minLength": low, "maxLength": high}
    document = json.dumps(text, ensure_ascii=False)  # the canonical spelling bounded strings use
    valid = jsonschema.Draft202012Validator(schema).is_valid(text)
    if low > high:
        assert not valid
        return
    m = _compile(schema).matcher()
    assert (m.accept_string(document) and m.can_terminate()) == valid


@settings(deadline=None, max_examples=30)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=10), st.integers(0, 3),
       st.sampled_from([3, 5, 9, 260, 1000, 100_000]))
def test_masks_inside_a_counted_string_are_exact(text: str, low: int, high: int) -> None:
    """Masks at every step of a bounded string (shared through the places with as many
    characters left) allow exactly the tokens the matcher accepts."""
    grammar = _compile({"type": "object", "properties": {"s": {"type": "string", "minLength": low,
                                                               "maxLength": high}}}, TOKENS)
    text = (text + "x" * low)[: max(low, min(len(text), high))]
    document = '{"s": ' + json.dumps(text, ensure_ascii=False) + "}"
    m, consumed = grammar.matcher(), b""
    for byte in document.encode():
        assert _mask_is_exact(grammar, m, consumed)
        assert m.accept_string(bytes([byte]))
        consumed += bytes([byte])
    assert _mask_is_exact(grammar, m, consumed) and m.can_terminate()


PATTERNS = ["^[a-c]+x?$", "^(ab)*$", "é[a-z]*", "^[0-9]{2,}$", "a", "^\\d+(\\.\\d+)?$", '["\\\\]', "^.{3}$"]
PIECES = st.lists(st.sampled_from(["a", "b", "c", "x", "ab", "é", "1", ".", '"', "\\", "日", "z"]), max_size=90).map("".join)


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(PATTERNS), st.integers(0, 4), st.integers(65, 90), st.lists(PIECES, min_size=1, max_size=6))
def test_a_pattern_under_a_large_maxlength_is_counted_exactly(pattern: str, low: int, high: int,
                                                             texts: list[str]) -> None:
    """maxLength from COUNT_FROM with a pattern: a counted product (its NFA small whatever the
    bound) that accepts exactly what jsonschema validates."""
    schema = {"type": "string", "minLength": low, "maxLength": high, "pattern": pattern}
    validator = jsonschema.Draft202012Validator(schema)
    texts = texts + [(texts[0] * 40)[:high], (texts[0] * 40)[: high + 1]]
    try:
        grammar = _compile(schema)
    except EmptyLanguageError:  # ^.{3}$ under minLength 4
        assert not any(validator.is_valid(text) for text in texts) and pattern == "^.{3}$"
        return
    assert [r.dfa.counted_dfa for r in grammar.dfa.nfa.regions if r.dfa is not None and r.last - r.first > 64]
    for text in texts:
        m = grammar.matcher()
        assert (m.accept_string(json.dumps(text, ensure_ascii=False)) and m.can_terminate()) == validator.is_valid(text)


@settings(deadline=None, max_examples=15)
@given(st.sampled_from(PATTERNS + ["format:date", "format:ipv4", "format:email"]), st.integers(0, 2),
       st.sampled_from([65, 70, 4096]), PIECES)
def test_masks_inside_a_counted_pattern_are_exact(pattern: str, low: int, high: int, text: str) -> None:
    """Masks inside a counted product (walked through the document, not shared) allow exactly
    the tokens the matcher accepts, up to where the text leaves the language."""
    spec = {"format": pattern[7:]} if pattern.startswith("format:") else {"pattern": pattern}
    grammar = _compile({"type": "object", "properties": {"s": {"type": "string", "minLength": low,
                                                               "maxLength": high, **spec}}}, TOKENS)
    m, consumed = grammar.matcher(), b""
    for byte in ('{"s": ' + json.dumps(text[:20], ensure_ascii=False)).encode():
        assert _mask_is_exact(grammar, m, consumed)
        if not m.accept_string(bytes([byte])):
            break
        consumed += bytes([byte])


def test_only_items_that_split_one_way_are_counted() -> None:
    """An item that is a prefix of another (a | aa) cannot be counted by where items end: such a
    bound stays a complete DFA, and exact (140 a's are 70 items of aa)."""
    builder = AutomatonBuilder()
    counted = And(regex("[a-c]+"), Repeat(chars([("a", "c")]), 0, 70))
    ambiguous = And(regex("a+"), Repeat(regex("a|aa"), 0, 70))
    assert isinstance(builder.embedded(counted), CountedDFA) and isinstance(builder.embedded(ambiguous), DFA)
    dfa = builder.dfa(seq(lit("<"), ambiguous, lit(">")))
    assert dfa.accepts(b"<" + b"a" * 140 + b">") and not dfa.accepts(b"<" + b"a" * 141 + b">")
    dfa = builder.dfa(seq(lit("<"), counted, lit(">")))
    assert dfa.accepts(b"<" + b"abc" * 23 + b"a>") and not dfa.accepts(b"<" + b"abc" * 23 + b"ab>")
