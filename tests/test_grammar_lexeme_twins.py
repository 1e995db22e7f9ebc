"""Boundary twins (grammar/lexemes.py `lexeme(..., twin=)`, grammar/twin_places.py): a state of an open
object's undeclared-key lexeme between two characters or inside a UTF-8 character keeps the tokens
inside that the string-contents lexeme keeps at the same place, and takes that shared mask
(`TokenMaskCache.lexeme_base`) instead of walking its own; mid-escape states walk their own.  Both must equal a walk of the
whole vocabulary through the key's own automaton without lexemes or slices."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.dfa import DEAD, START
from formwork.grammar.json_schema import compile_json_schema
from formwork.grammar.twin_places import twin_place


_KEY_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))


def check_key_states(vocab, unsliced, names: list[str], key: str) -> tuple[int, int]:
    """Walk `{"` and `key`'s canonical spelling byte by byte through an open object beside `names`;
    at each state inside a lexeme with a twin check its mask against the unsliced walk's, and that
    it is the twin's shared mask where the twin has a place for it: between two characters and
    inside a UTF-8 character (equal to the twin's mask after the same bytes of it), not mid-escape.
    Returns (shared, own) states."""
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    grammar = compile_json_schema(schema, vocab)
    cache = grammar.mask_cache
    spelling = json.dumps(key, ensure_ascii=False)[1:-1].encode()
    boundaries = sorted({len(json.dumps(key[:i], ensure_ascii=False)[1:-1].encode()) for i in range(len(key) + 1)})
    state = grammar.dfa.walk(START, b'{"')
    counts = [0, 0]
    for at in range(len(spelling) + 1):
        where = grammar.dfa.lexeme_state(state)
        twin = None if where is None else getattr(where.automaton, "boundary_twin", None)
        if twin is not None:
            base = cache.lexeme_base(where.automaton, where.state)
            expected = unsliced.mask(where.automaton, where.state) & unsliced.text_words
            assert np.array_equal(base, expected), (names, spelling[:at])
            partial = spelling[max(b for b in boundaries if b <= at): at]  # of the character at `at`
            place = twin_place(where.automaton, where.state, twin)
            assert (place is not None) == (not partial or partial[0] >= 0x80), (names, spelling[:at])
            if place is not None:
                assert base is cache.lexeme_base(twin, place), (names, spelling[:at])
                assert np.array_equal(base, unsliced.mask(twin, twin.walk(START, partial)) & unsliced.text_words)
            counts[bool(partial) and partial[0] < 0x80] += 1
        if at < len(spelling):
            state = grammar.dfa.walk(state, spelling[at: at + 1])
            assert state != DEAD
    return counts[0], counts[1]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.text(alphabet="ab_\u00e9", min_size=1, max_size=4), min_size=1, max_size=4, unique=True),
       st.text(alphabet=_KEY_CHARS, max_size=5) | st.text(alphabet="ab_\n\u00e9\u4e2d\"\\\x01", max_size=6))
def test_key_states_equal_the_unsliced_walk(vocab, unsliced, names, key):
    """At every byte of an undeclared key the lexeme's mask equals the unsliced walk's less the stop
    tokens, and is the twin's shared mask exactly where the twin has a place for it (names with
    non-ASCII characters fall back to an embedded automaton: no twin, nothing checked)."""
    check_key_states(vocab, unsliced, names, key)


@pytest.mark.parametrize("names, key, shared, own", [
    (["id", "idx"], "idq\u00e9z", 4, 0),  # after "idq", "idqé", "idqéz"; mid-"é"
    # shared: after "x", "\n", "\u0001", "中", "😀" (5), mid-"中" (2), mid-"😀" (3); own: mid-escapes (1 + 5)
    (["id"], "x\n\x01\u4e2d\U0001f600", 10, 6),
])
def test_twin_taken_between_characters_only(vocab, unsliced, names, key, shared, own):
    """The twin's masks are taken (not dead code) where it has a place, and only there."""
    assert check_key_states(vocab, unsliced, names, key) == (shared, own)


def test_prepare_computes_the_twin_places_masks(vocab):
    """`GrammarCompiler.prepare` finds the string-contents lexeme's places inside UTF-8 characters
    (1, 2 or 3 bytes left, and the second bytes of E0, ED, F0, F4 leads) and computes their masks."""
    from formwork.grammar.automaton import AutomatonBuilder
    from formwork.grammar.compiler import GrammarCompiler
    from formwork.grammar.json_schema.automata import SHARED
    from formwork.grammar.json_schema.strings import ANY_CONTENT
    from formwork.grammar.token_mask import _WITHOUT_STOPS
    from formwork.grammar.twin_places import _PLACES
    SHARED._builder = AutomatonBuilder()  # as a fresh process has it: nothing built yet
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    compiler.prepare()
    twin = SHARED._builder.lexeme_automaton(ANY_CONTENT)
    places = _PLACES[twin]
    assert {len(rest) for rest in places} == {1, 2, 3} and len(places) == 7
    assert all((_WITHOUT_STOPS, twin.state_key(s)) in compiler.mask_cache.keys() for s in places.values())
