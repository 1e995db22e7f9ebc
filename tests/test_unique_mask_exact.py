"""`uniqueItems` masks test only the tokens that can matter (`UniqueTracker._candidates`): the mask
must still equal `accept_token` on every token of the vocabulary, at every step of random walks,
and the region analysis over byte classes (`TaggedMoves.classed`) must see what the per-byte
moves see."""
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from mask_probe import accepted_tokens, compile_unless_empty, mask_of  # noqa: E402
from test_json_unique_unbounded import FAVOURITES, STOP, VOCAB, schemas  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.unique_regions import _EXIT, Regions, TaggedMoves  # noqa: E402
from formwork.grammar.unique_scan import BYTE_CLASS, START_STATE, step  # noqa: E402

#: arrays whose items end on a byte after them (numbers) or hold second spellings, where the mask
#: relies on `Regions.good_in_item` rather than on earlier values' spellings
NUMBER_ARRAYS = st.sampled_from([
    {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "uniqueItems": True},
    {"type": "array", "items": {"type": "number"}, "uniqueItems": True, "maxItems": 3},
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 12}, "uniqueItems": True},
    {"type": "array", "items": {"type": "array", "items": {"type": "number"}}, "uniqueItems": True},
    {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "number"}}}, "uniqueItems": True},
])




@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(schemas(), NUMBER_ARRAYS), st.data())
def test_the_mask_equals_accept_token_on_every_token(schema, data):
    grammar = compile_unless_empty(schema, VOCAB)
    if grammar is None:  # the language may be empty (minItems over a small domain)
        return
    matcher = grammar.matcher(max_step_seconds=None)
    text = b""
    for _ in range(40):
        mask, accepted = mask_of(matcher, VOCAB.vocab_size), accepted_tokens(matcher, VOCAB.vocab_size)
        assert (mask == accepted).all(), (schema, text, [VOCAB.token_bytes[t] for t in np.flatnonzero(mask != accepted)])
        tokens = [int(t) for t in np.flatnonzero(accepted) if t != STOP]
        if not tokens:
            break
        favourites = [t for t in tokens if VOCAB.token_bytes[t] in FAVOURITES]
        pool = favourites if favourites and data.draw(st.integers(0, 3)) else tokens
        token = pool[data.draw(st.integers(0, len(pool) - 1))]
        assert matcher.accept_token(token)
        text += VOCAB.token_bytes[token]


def test_bytes_of_one_class_step_alike_from_every_state():
    """`BYTE_CLASS` groups bytes `step` cannot tell apart, from every scanner state reached
    within three bytes of the start, in every mode (a wrong grouping would hide a move from the
    region analysis)."""
    states, frontier = {START_STATE}, [START_STATE]
    for _ in range(3):
        reached = []
        for state in frontier:
            for b in range(256):
                try:
                    after = step(state, b, b % 2 == 0)[0]
                except (IndexError, KeyError, TypeError):  # bytes JSON never has there
                    continue
                if after not in states:
                    states.add(after)
                    reached.append(after)
        frontier = reached
    assert {state[0] for state in states} >= set("VSENL")
    for state in states:
        for unique in (False, True):
            for b in range(256):
                try:
                    got = step(state, b, unique)
                except (IndexError, KeyError, TypeError):
                    got = None
                try:
                    rep = step(state, BYTE_CLASS[b], unique)
                except (IndexError, KeyError, TypeError):
                    rep = None
                assert got == rep, (state, b, BYTE_CLASS[b])


def test_classed_moves_give_the_region_the_same_edges():
    schema = {"type": "array", "items": {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 3}, "b": {"type": "number"}, "c": {"type": "boolean"}}},
        "uniqueItems": True}
    grammar = compile_json_schema(schema, VOCAB, compiler=GrammarCompiler(VOCAB))
    regions = Regions(TaggedMoves(grammar.unique.moves.dfa))
    root = (grammar.unique.moves.nexts(1, 0x5B)[0][0], ("V", ("A0",), None))
    seen, todo = {root}, [root]
    while todo:
        node = todo.pop()
        every = {(nxt, kinds, flags) for _, nxt, kinds, flags in regions.edges(node)}
        assert {(nxt, kinds, flags) for _, nxt, kinds, flags in regions.edges(node, True)} == every
        for nxt, _, _ in every:
            if nxt is not _EXIT and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    assert len(seen) > 50
