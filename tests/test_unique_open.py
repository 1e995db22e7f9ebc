"""Unique arrays of open values (`unique_open`): the tracker reads their items' freshness off the
scanner state instead of analysing the array's region.

Properties: `endless` gives every node of such a region the verdict the region analysis gives it
(the same array tagged as any other unique array); along random walks (a vocabulary of bytes and
of tokens that stop inside literals, zero exponents, or after a string), the mask equals the mask
of the same schema tracked the old way and the tokens `accept_token` takes, and every finished
document is valid under jsonschema; the per-vocabulary table of tokens that may stop where
`endless` fails agrees with the scanner token by token."""
import json
import sys
from pathlib import Path
from unittest import mock

import jsonschema
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from mask_probe import accepted_tokens, mask_of  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.dfa import START  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.unique_open import MODES, OPEN_VALUES, LooseEnds, endless  # noqa: E402
from formwork.grammar.unique_prepare import ROOT_STATE  # noqa: E402
from formwork.grammar.unique_scan import step  # noqa: E402
from formwork.grammar.vocabulary import Vocabulary  # noqa: E402

#: multi-byte tokens that stop inside a literal, an exponent, a string, or hold a whole item
_WORDS = [b"tr", b"fals", b"nu", b",t", b"[t", b'",t', b"0e", b"0E+", b"-0.0e", b"1e", b"e-", b".0",
          b'"a"', b'",', b'"]', b'"a', b"a\"", b",0", b"[0e", b"true", b"1,", b"],[", b"[]", b"{}",
          b'{"a":', b'":[', b"\\u00", b"00", b"e0"]
TOKENS = [bytes([b]) for b in range(256)] + _WORDS
VOCAB = Vocabulary(TOKENS + [None], stop_token_ids=[len(TOKENS)])
_PREFERRED = b'01"],[tfne.-a{:'

OPEN = st.fixed_dictionaries({"type": st.just("array"), "uniqueItems": st.just(True)},
                             optional={"minItems": st.integers(0, 2), "maxItems": st.integers(2, 4),
                                       "items": st.sampled_from([True, {}, {"type": "string"},
                                                                 {"type": "string", "title": "t"}])})


@st.composite
def schemas(draw):
    """An open unique array bare, as an object member, inside a unique array of objects, or beside
    another array that one `[` may open (two readings)."""
    array = draw(OPEN)
    where = draw(st.integers(0, 4))
    if where == 1:
        return {"type": "object", "properties": {"e": array, "k": {"type": "integer"}},
                "additionalProperties": False}
    if where == 2:
        return {"type": "array", "uniqueItems": True, "maxItems": 3, "items": {
            "type": "object", "properties": {"e": array}, "required": ["e"], "additionalProperties": False}}
    if where == 3:
        return {"anyOf": [array, {"type": "array", "items": {"type": "integer"}, "maxItems": 2}]}
    if where == 4:
        return {"anyOf": [array, {"type": "array", "uniqueItems": True, "items": {"type": "string", "maxLength": 1}}]}
    return array


def _compile(schema, open_values: bool = True):
    compiler = GrammarCompiler(VOCAB, cache_enabled=False)
    if open_values:
        return compile_json_schema(schema, VOCAB, compiler=compiler, max_nesting_depth=2)
    with mock.patch("formwork.grammar.json_schema.arrays._open_items", return_value=False):
        return compile_json_schema(schema, VOCAB, compiler=compiler, max_nesting_depth=2)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from([{"type": "array", "uniqueItems": True},
                        {"type": "array", "uniqueItems": True, "minItems": 2, "maxItems": 3},
                        {"type": "array", "uniqueItems": True, "items": {"type": "string"}, "minItems": 1}]),
       st.integers(0, 2))
def test_endless_is_the_region_analysis_verdict(array, levels):
    """Every node of an open array's region, analysed as any unique array's: good (and good
    without counting completions) exactly where `endless` says so, for the item in progress or,
    between items, for the next."""
    grammar = compile_json_schema(array, VOCAB, max_nesting_depth=levels,
                                  compiler=GrammarCompiler(VOCAB, cache_enabled=False))
    with mock.patch("formwork.grammar.json_schema.arrays._open_items", return_value=False):
        old = compile_json_schema(array, VOCAB, max_nesting_depth=levels,
                                  compiler=GrammarCompiler(VOCAB, cache_enabled=False))
    assert [unique for _, _, unique in grammar.unique.moves.moves(START) if unique] == [OPEN_VALUES]
    regions = old.unique.regions
    root = next(nxt for _, nxt, unique in regions.moves.moves(START) if unique)
    regions.good((root, ROOT_STATE), True)
    nodes = {node for node, _ in regions._good}
    assert len(nodes) > 3
    for node in nodes:
        between = node[1][0] == "V" and len(node[1][1]) == 1
        assert regions.good(node, between) == endless(node[1]), node
        assert regions._unbounded[(node, between)] == endless(node[1]), node


def _walk_text(tokens: list[int]) -> bytes:
    return b"".join(VOCAB.token_bytes[t] for t in tokens)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(schemas(), st.data())
def test_masks_equal_the_region_analysis_masks_and_accept_token(schema, data):
    new = _compile(schema).matcher(max_step_seconds=None)
    old = _compile(schema, open_values=False).matcher(max_step_seconds=None)
    taken: list[int] = []
    for _ in range(40):
        mask = mask_of(new, VOCAB.vocab_size)
        assert np.array_equal(mask, mask_of(old, VOCAB.vocab_size)), _walk_text(taken)
        assert np.array_equal(mask, accepted_tokens(new, VOCAB.vocab_size)), _walk_text(taken)
        allowed = [int(t) for t in np.flatnonzero(mask) if t != VOCAB.vocab_size - 1]
        if new.can_terminate() and (not allowed or data.draw(st.integers(0, 5)) == 0):
            break
        assert allowed, _walk_text(taken)  # no dead end
        preferred = [t for t in allowed if all(b in _PREFERRED for b in VOCAB.token_bytes[t])]
        token = data.draw(st.sampled_from(preferred or allowed))
        assert new.accept_token(token) and old.accept_token(token)
        taken.append(token)
    if new.can_terminate():
        jsonschema.validate(json.loads(_walk_text(taken)), schema)


def test_a_repeated_literal_or_zero_is_refused_where_it_stops():
    """After [true,0, the tokens `tr` and `0e` stop where every completion repeats an item."""
    matcher = _compile({"type": "array", "uniqueItems": True}).matcher(max_step_seconds=None)
    for token in (b"[", b"true", b",0", b","):
        assert matcher.accept_token(TOKENS.index(token))
    mask = mask_of(matcher, VOCAB.vocab_size)
    assert not mask[TOKENS.index(b"tr")] and not mask[TOKENS.index(b"0e")]
    assert not mask[TOKENS.index(b"-0.0e")]
    assert mask[TOKENS.index(b"fals")] and mask[TOKENS.index(b"1e")] and mask[TOKENS.index(b"nu")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=20), st.sampled_from(sorted(MODES.index)))
def test_loose_ends_agree_with_the_scanner(tokens, start):
    table = LooseEnds(tokens)
    got = set(table.tokens(*start).tolist())
    for i, data in enumerate(tokens):
        state = (start[0], ("Rv",) + ("av",) * 8, start[1])  # deep enough for every closer
        for b in data:
            state = step(state, b)[0]
        mode, _, aux = state
        loose = mode == "L" or (mode == "N" and aux[0] in "xyd" and not aux[1])
        assert (i in got) == loose, (data, start)
