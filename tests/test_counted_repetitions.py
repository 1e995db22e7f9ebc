"""Bounded repetitions counted over their item: a string under maxLength costs the NFA its
character's states whatever the bound, and accepts exactly what the schema allows."""
from __future__ import annotations

import json

import jsonschema
import numpy as np
from hypothesis import given, settings, strategies as st

from formwork.grammar.compiler import GrammarCompiler
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
