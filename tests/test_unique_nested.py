"""Unique arrays of unique arrays of bounded items: one completion must keep every level's items
new at once (`unique_search`).  Deciding each level on its own lets a walk reach a dead end: a
prefix whose every completion repeats an outer item or an inner one.

Properties: random walks over such schemas, each step a token the mask allows, never meet an
empty mask before the document can end, the mask equals `accept_token`, and every finished
document is valid under jsonschema."""
import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from mask_probe import accepted_tokens, compile_unless_empty, mask_of  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

VOCAB = byte_vocab()
#: bytes a walk prefers, so that items are short and repeat
_PREFERRED = b'ab01"],[tfn'
BOUNDED = st.sampled_from([
    {"type": "string", "pattern": "^[ab]?$"},
    {"type": "string", "enum": ["", "a"]},
    {"type": "integer", "minimum": 0, "maximum": 2},
    {"type": "boolean"},
    {"enum": [0, "a", None]},
    {"type": "object", "properties": {"k": {"type": "string", "pattern": "^[ab]?$"}}, "additionalProperties": False},
])


@st.composite
def unique_arrays(draw, depth: int):
    """A unique array whose items are bounded, or (depth > 1) unique arrays of them, bare or
    inside an object member or a short plain array."""
    items = draw(BOUNDED) if depth == 1 else draw(unique_arrays(depth - 1))
    wrap = draw(st.integers(0, 5)) if depth > 1 else 0
    if wrap == 1:
        items = {"type": "object", "properties": {"u": items, "s": draw(BOUNDED)}, "required": ["u"],
                 "additionalProperties": False}
    elif wrap == 2:
        items = {"type": "array", "items": items, "maxItems": 2}
    array = {"type": "array", "items": items, "uniqueItems": True}
    if depth == 1 or draw(st.booleans()):
        array["maxItems"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        array["minItems"] = draw(st.integers(0, 2))
    return array


NESTED = st.integers(2, 3).flatmap(unique_arrays)




def _allowed_after(matcher, text: bytes) -> list[bytes]:
    for b in text:
        assert matcher.accept_token(b), text
    allowed = np.flatnonzero(mask_of(matcher, VOCAB.vocab_size))
    return [VOCAB.token_bytes[t] for t in allowed if VOCAB.token_bytes[t] is not None]


def _nested(inner: dict) -> dict:
    return {"type": "array", "items": {"type": "array", "items": {"type": "string", "pattern": "^[ab]?$"},
                                       "uniqueItems": True, "maxItems": 2, **inner}, "uniqueItems": True}


def test_an_inner_array_whose_completions_all_repeat_is_refused_before_it_dead_ends():
    """After [["","a"],["","b"], the inner array ["", can only end as ["","a"], ["","b"] (outer
    duplicates) or ["",""] (an inner one): the comma is refused, the array may close after ""."""
    matcher = compile_json_schema(_nested({}), VOCAB, compiler=GrammarCompiler(VOCAB)).matcher(max_step_seconds=None)
    allowed = _allowed_after(matcher, b'[["","a"],["","b"],[""')
    assert b"]" in allowed and b"," not in allowed
    assert not matcher.accept_token(ord(","))
    assert b"]" in _allowed_after(matcher, b"]]") or matcher.can_terminate()


def test_with_min_items_two_every_pair_is_used_and_then_the_array_must_close():
    """minItems 2 over "", "a", "b": an inner array starting "" after [["","a"],["","b"], has no
    new completion; once all six ordered pairs are used, no seventh item may start."""
    schema = _nested({"minItems": 2})
    matcher = compile_json_schema(schema, VOCAB, compiler=GrammarCompiler(VOCAB)).matcher(max_step_seconds=None)
    assert _allowed_after(matcher, b'[["","a"],["","b"],["') == [b"a", b"b"]
    allowed = _allowed_after(matcher, b'a",""],["b","a"],["a","b"],["b",""]')
    assert b"]" in allowed and b"," not in allowed
    assert matcher.accept_token(ord("]")) and matcher.can_terminate()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(NESTED, st.data())
def test_walks_never_dead_end_and_finish_valid_documents(schema, data):
    grammar = compile_unless_empty(schema, VOCAB)
    if grammar is None:  # the language may be empty (minItems over a small domain)
        return
    matcher = grammar.matcher(max_step_seconds=None)
    text = b""
    for _ in range(120):
        mask = mask_of(matcher, VOCAB.vocab_size)
        assert (mask == accepted_tokens(matcher, VOCAB.vocab_size)).all(), (schema, text)
        tokens = [int(t) for t in np.flatnonzero(mask) if VOCAB.token_bytes[t] is not None]
        # an empty mask at the start: no array of distinct items is long enough (minItems)
        assert tokens or matcher.can_terminate() or not text, f"dead end after {text!r} in {schema}"
        if not tokens or (matcher.can_terminate() and data.draw(st.integers(0, 3)) == 0):
            break
        preferred = [t for t in tokens if all(b in _PREFERRED for b in VOCAB.token_bytes[t])] or tokens
        if data.draw(st.integers(0, 2)):  # mostly grow: arrays fill up and items repeat
            preferred = [t for t in preferred if b"]" not in VOCAB.token_bytes[t]] or preferred
        token = preferred[data.draw(st.integers(0, len(preferred) - 1))]
        assert matcher.accept_token(token)
        text += VOCAB.token_bytes[token]
    if matcher.can_terminate():
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)), (schema, text)
