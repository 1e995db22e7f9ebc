"""`uniqueItems: true` over unbounded items: the matcher compares the items (`unique_tracker`).

Properties: random schemas with unique arrays of strings, numbers, objects and arrays, walked by
random tokens drawn from the masks of a vocabulary with multi-byte tokens: every document the
matcher completes is valid under jsonschema, no reachable state has an empty mask unless it can
end, the mask and `accept_token` agree, and `rollback` restores the masks exactly."""
import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402
from mask_probe import compile_unless_empty  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.compiler import allocate_token_bitmask  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema  # noqa: E402
from formwork.grammar.unique_vocab import (  # noqa: E402
    BACKSLASH, CLOSE, COMMA, LITERAL, NUMBER_END, OPEN, QUOTE, SPACE, TWO_QUOTES, signatures,
)
from formwork.grammar.vocabulary import Vocabulary  # noqa: E402

_PIECES = [b'","', b'"]', b'["', b'"a"', b'"b"', b'1,', b'},{', b'"}', b'a"', b'ab', b'null', b'true',
           b']}', b'[]', b'{}', b'10', b'0.', b'.5', b'", "', b'{"a":', b'"a":', b'1]', b'0]', b'e1',
           b'"a","a"]', b'[1,1]', b'[[', b']]', b'[1', b'1.0', b'"\\u0061"', b'\\u00']
VOCAB = Vocabulary([bytes([b]) for b in range(256)] + _PIECES + [None],
                   stop_token_ids=[256 + len(_PIECES)])
STOP = 256 + len(_PIECES)
#: tokens a walk prefers, so that items repeat
FAVOURITES = {b'"', b'a', b'b', b']', b',', b'1', b'0', b'}', b'{', b'[', b'"a"', b'"b"', b'1,',
              b'1]', b'"a","a"]', b'[1,1]', b'"\\u0061"', b'0]'}

ITEMS = st.sampled_from([
    {"type": "string"},
    {"type": "string", "maxLength": 1},
    {"type": "string", "pattern": "^[ab]{0,2}$"},
    {"type": "integer"},
    {"type": "integer", "minimum": 0, "maximum": 100},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": "number"},
    {"type": ["string", "integer"], "maxLength": 1, "minimum": 0, "maximum": 80},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 80}},
     "required": ["a"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "string", "maxLength": 1}},
     "additionalProperties": False},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 70}, "maxItems": 2},
])


@st.composite
def schemas(draw):
    array = {"type": "array", "items": draw(ITEMS), "uniqueItems": True}
    for key in ("minItems", "maxItems"):
        if draw(st.integers(0, 2)) == 0:
            array[key] = draw(st.integers(0, 4))
    if draw(st.booleans()):
        return array
    return {"type": "object", "properties": {"x": array, "y": {"type": "array", "items": {"type": "integer"}}},
            "additionalProperties": False}


def _allowed(matcher) -> list[int]:
    bitmask = allocate_token_bitmask(1, VOCAB.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask.numpy()[0].view(np.uint8), bitorder="little")[: VOCAB.vocab_size]
    return [int(t) for t in np.flatnonzero(bits)]


_SETTINGS = settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(schemas(), st.data())
def test_random_walks_complete_valid_documents_and_never_dead_end(schema, data):
    grammar = compile_unless_empty(schema, VOCAB)
    if grammar is None:  # the language may be empty (minItems over a small domain)
        return
    validator = jsonschema.Draft202012Validator(schema)
    for _ in range(3):
        matcher = grammar.matcher(max_step_seconds=None)  # no wall-clock budget on a loaded box
        text = b""
        for _ in range(60):
            allowed = _allowed(matcher)
            assert allowed, f"dead end after {text!r}"
            if STOP in allowed and data.draw(st.integers(0, 3)) == 0:
                break
            tokens = [t for t in allowed if t != STOP]
            favourites = [t for t in tokens if VOCAB.token_bytes[t] in FAVOURITES]
            pool = favourites if favourites and data.draw(st.integers(0, 4)) else tokens or [STOP]
            token = pool[data.draw(st.integers(0, len(pool) - 1))]
            refused = data.draw(st.integers(0, VOCAB.vocab_size - 1))
            if refused not in allowed:  # the mask and accept_token agree on a refused token too
                assert not matcher.accept_token(refused), (text, refused)
            assert matcher.accept_token(token), (text, VOCAB.token_bytes[token])
            if token == STOP:
                break
            text += VOCAB.token_bytes[token]
        if matcher.can_terminate() or matcher.is_terminated():
            document = json.loads(text)
            assert validator.is_valid(document), (json.dumps(schema), text)


@_SETTINGS
@given(schemas(), st.data())
def test_rollback_restores_the_masks(schema, data):
    grammar = compile_unless_empty(schema, VOCAB)
    if grammar is None:  # the language may be empty (minItems over a small domain)
        return
    matcher = grammar.matcher(max_step_seconds=None)  # no wall-clock budget on a loaded box
    masks, steps = [], []
    for _ in range(data.draw(st.integers(1, 30))):
        allowed = [t for t in _allowed(matcher) if t != STOP]
        if not allowed:
            break
        masks.append(allowed)
        token = allowed[data.draw(st.integers(0, len(allowed) - 1))]
        assert matcher.accept_token(token)
        steps.append(token)
    back = data.draw(st.integers(0, len(steps)))
    matcher.rollback(back)
    if back:
        assert _allowed(matcher) == masks[len(steps) - back]
    replay = grammar.matcher(max_step_seconds=None)
    for token in steps[: len(steps) - back]:
        assert replay.accept_token(token)
    assert _allowed(replay) == _allowed(matcher)


def test_items_are_compared_as_json_values():
    assert_exact({"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                 [[], ["a"], ["a", "b"], ["a", "a"], ["a", "b", "a"], ["", ""], ["\n", "\n"]])
    assert_exact({"type": "array", "items": {"type": "number"}, "uniqueItems": True},
                 [[1, 2], [1, 1.0], [0, 0], [1e2, 100], [1, 10], [-1, 1]])
    assert_exact({"type": "array", "items": {"type": "object"}, "uniqueItems": True},
                 [[{"a": 1, "b": 2}, {"b": 2, "a": 1}], [{"a": 1}, {"a": 2}], [{}, {}]])
    assert_exact({"type": "array", "uniqueItems": True},
                 [[1, "1"], [True, 1], [[1], [1]], [[1], [1, 1]], [None, None]])


def test_escapes_and_spellings_are_decoded():
    grammar = compile_json_schema({"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                                  byte_vocab())
    for text, ok in [('["a","\\u0061"]', False), ('["\\n","\\u000a"]', False), ('["a","\\u0062"]', True)]:
        matcher = grammar.matcher(max_step_seconds=None)  # no wall-clock budget on a loaded box
        assert (matcher.accept_string(text) and matcher.can_terminate()) is ok, text
    grammar = compile_json_schema({"type": "array", "items": {"type": "number"}, "uniqueItems": True},
                                  byte_vocab())
    for text, ok in [("[1,1.0]", False), ("[1,1e0]", False), ("[10,1e1]", False), ("[1,1.5]", True)]:
        matcher = grammar.matcher(max_step_seconds=None)  # no wall-clock budget on a loaded box
        assert (matcher.accept_string(text) and matcher.can_terminate()) is ok, text


def test_a_complete_duplicate_is_masked_where_its_value_is_fixed():
    grammar = compile_json_schema({"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
                                  byte_vocab())
    matcher = grammar.matcher(max_step_seconds=None)  # no wall-clock budget on a loaded box
    assert matcher.accept_string("[0,")
    assert ord("0") not in _allowed_bytes(matcher)  # 0 cannot grow into another integer
    assert matcher.accept_string("1")
    assert ord(",") in _allowed_bytes(matcher)
    grammar = compile_json_schema({"type": "array", "items": {"type": "string", "pattern": "^[ab]$"},
                                   "uniqueItems": True, "minItems": 2}, byte_vocab())
    matcher = grammar.matcher(max_step_seconds=None)  # no wall-clock budget on a loaded box
    assert matcher.accept_string('["a",')
    assert matcher.accept_string('"')
    assert set(_allowed_bytes(matcher)) == {ord("b")}  # "a" again would be a dead end
    assert not matcher.accept_string("a")


def _allowed_bytes(matcher) -> list[int]:
    bitmask = allocate_token_bitmask(1, 257)
    matcher.fill_next_token_bitmask(bitmask)
    bits = np.unpackbits(bitmask.numpy()[0].view(np.uint8), bitorder="little")[:256]
    return [int(b) for b in np.flatnonzero(bits)]


def test_nested_unique_arrays_and_objects():
    schema = {"type": "array", "uniqueItems": True,
              "items": {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True,
                                                                  "items": {"type": "string"}}},
                        "required": ["tags"], "additionalProperties": False}}
    assert_exact(schema, [[{"tags": ["a", "b"]}, {"tags": ["b", "a"]}], [{"tags": []}, {"tags": []}],
                          [{"tags": ["a", "a"]}], [{"tags": ["a"]}, {"tags": ["a", "c"]}]])


def test_what_cannot_be_tracked_is_refused_with_the_pointer():
    recursive = {"$defs": {"n": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/n"}, "uniqueItems": True}}}},
        "$ref": "#/$defs/n"}
    with pytest.raises(UnsupportedSchemaError) as err:
        compile_json_schema(recursive, byte_vocab())
    assert err.value.pointer == "/$defs/n/properties/kids/uniqueItems"
    assert "the items of this one refer back to a recursive part of the schema" in str(err.value)
    lenient = compile_json_schema(recursive, byte_vocab(), lenient=True)
    assert lenient.unique is None and any("distinct items" in w for w in lenient.warnings)
    matcher = lenient.matcher()
    assert matcher.accept_string('{"kids":[{},{}]}')  # lenient: not enforced, and said so


def test_unique_arrays_in_separate_branches_by_type_compile():
    schema = {"anyOf": [{"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                        {"type": "string"}]}
    assert_exact(schema, [["a", "b"], ["a", "a"], "x"])


def test_grammars_without_unique_arrays_carry_nothing():
    grammar = compile_json_schema({"type": "array", "items": {"type": "string"}}, byte_vocab())
    assert grammar.unique is None and grammar.matcher()._unique is None


def _plain_signature(data: bytes) -> int:
    quotes = data.count(b'"')
    bits = (QUOTE if quotes else 0) | (TWO_QUOTES if quotes > 1 else 0)
    bits |= (CLOSE if b"]" in data or b"}" in data else 0) | (OPEN if b"[" in data else 0)
    bits |= (COMMA if b"," in data else 0) | (SPACE if any(b in b" \t\n\r" for b in data) else 0)
    bits |= LITERAL if data.lstrip(b" \t\n\r")[:1] in (b"t", b"f", b"n") else 0
    digits = [i for i, b in enumerate(data) if b in b"0123456789"]
    if digits and any(b in b" \t\n\r,]}" for b in data[digits[0]:]):
        bits |= NUMBER_END
    return bits | (BACKSLASH if b"\\" in data else 0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(min_size=1, max_size=6),
                          st.text(alphabet=' "[]{},0123456789tfnelx\t', min_size=1, max_size=6)
                          .map(str.encode)), max_size=20))
def test_token_signatures_say_what_can_end_or_open_an_item(tokens):
    assert signatures(tokens).tolist() == [_plain_signature(t) if t else 0 for t in tokens]
