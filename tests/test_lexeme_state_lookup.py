"""The lookups behind a document state's lexeme mask: `SubsetBuilder.region_of` (its per-region
facts kept), `LazyDFA.state_of` (its answers kept) and the warm-up of a shared eager automaton's
slice-covering states (`lexeme_masks.warm_slice_states`): each must give what it gave uncached."""
import json

import numpy as np
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.compiler import GrammarCompiler
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.json_schema import compile_json_schema
from formwork.grammar.lexeme_masks import warm_slice_states
from formwork.grammar.token_mask import _WITHOUT_STOPS, TokenMaskCache


def region_of_by_definition(builder, i):
    """`region_of` computed from its definition, nothing kept (the reference)."""
    nfa = builder._nfa
    k = builder.core.locate(i) if nfa.region_tuples else -1
    if k < 0:
        return None
    states, region = builder.sets[i], nfa.region(k)
    if getattr(region.dfa, "counted_dfa", False):
        return None
    inside = frozenset(x for x in states if region.first <= x < region.last)
    if region.dfa is not None and len(inside) > 1:
        return None
    at_start = region.start in states
    if at_start and region.start_moves != nfa.move_counts(region.start):
        return None
    if len(inside) + at_start == len(states):
        return region, inside, at_start, False
    rest = set(states) - inside - {region.start}
    after = frozenset(builder.closure(region.end))
    if rest == after and region.start not in after and not any(region.first <= x < region.last for x in after):
        return region, inside, at_start, True
    return None


NAMES = st.lists(st.text(alphabet="abk_", min_size=1, max_size=4), min_size=1, max_size=3, unique=True)
VALUES = st.sampled_from([{"type": "integer"}, {"type": "string"}, {"type": "string", "maxLength": 5},
                          {"type": "number", "minimum": 0}, {"type": "string", "format": "date"},
                          {"enum": ["on", "off"]}, {}])


@settings(max_examples=25, deadline=None)
@given(names=NAMES, values=st.lists(VALUES, min_size=3, max_size=3), closed=st.booleans(),
       text=st.text(alphabet='abk_{}[]":, 0123456789.-xyzé\\', max_size=40))
def test_region_of_is_its_definition_at_every_state(vocab, names, values, closed, text):
    """Every state built while walking a schema's documents (and some text) lies in the region
    the definition names, with the same NFA states inside and the same start and end flags."""
    schema = {"type": "object", "properties": {n: values[i % 3] for i, n in enumerate(names)}}
    if closed:
        schema["additionalProperties"] = False
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    dfa = grammar.dfa
    for doc in (json.dumps({n: 1 for n in names}), '{"' + text, text):
        state = START
        for byte in doc.encode():
            state = dfa.walk(state, bytes((byte,)))
            if state == DEAD:
                break
    builder = dfa._b
    for i in range(len(builder.sets)):
        for _ in range(2):  # the second time through the kept facts
            assert builder.region_of(i) == region_of_by_definition(builder, i), i


@settings(max_examples=20, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=6))
def test_state_of_answers_are_the_interned_ids(vocab, walks):
    """`state_of` of a state's own NFA set is that state, asked as a set or a tuple, first or again."""
    grammar = compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}, vocab,
                                  compiler=GrammarCompiler(vocab, cache_enabled=False))
    dfa = grammar.dfa
    for data in walks:
        dfa.walk(START, b'{"' + data)
    sets = list(dfa._b.sets)
    for _ in range(2):
        for i, nfa_states in enumerate(sets[1:], start=1):
            assert dfa.state_of(frozenset(nfa_states)) == i
            assert dfa.state_of(nfa_states) == i


def test_warm_slice_states_computes_the_exact_masks_inside_strings(vocab, unsliced):
    """The warmed states are exactly those that admit the whole slice (inside a string, between
    two characters), and their kept masks are the whole walk's less the stop tokens."""
    from formwork.grammar.json_schema.lowering import _shared_any_value
    from formwork.grammar.json_schema.options import JsonSchemaOptions

    dfa = AutomatonBuilder().eager(_shared_any_value(JsonSchemaOptions())(2, 0))
    cache = TokenMaskCache(vocab)
    count = warm_slice_states(cache, dfa)
    warmed = [s for s in range(1, dfa.num_states) if (_WITHOUT_STOPS, dfa.state_key(s)) in cache._pinned]
    assert count == len(warmed) > 0
    assert all(cache.token_slice.covers(dfa, s) for s in warmed)
    assert dfa.walk(START, b'"') in warmed and dfa.walk(START, b'["ab') in warmed
    assert dfa.walk(START, b'"\\') not in warmed and dfa.walk(START, b"[") not in warmed
    for s in warmed:
        want = unsliced.mask(dfa, s) & unsliced.text_words
        assert np.array_equal(cache.lexeme_base(dfa, s), want), s
    assert warm_slice_states(TokenMaskCache(vocab, use_slices=False), dfa) == 0


def test_warmed_masks_outlive_the_lru(vocab):
    """Masks warmed at start-up are pinned: a long run of other states through a small LRU does not
    evict them, so their states are hits afterwards (unpinned ones are computed again)."""
    from formwork.grammar.json_schema.lowering import _shared_any_value
    from formwork.grammar.json_schema.options import JsonSchemaOptions

    dfa = AutomatonBuilder().eager(_shared_any_value(JsonSchemaOptions())(2, 0))
    cache = TokenMaskCache(vocab, max_entries=4)
    count = warm_slice_states(cache, dfa)
    assert cache.num_pinned == count > 4
    warmed = [s for s in range(1, dfa.num_states) if (_WITHOUT_STOPS, dfa.state_key(s)) in cache._pinned]
    others = [s for s in range(1, dfa.num_states) if s not in set(warmed)][:12]
    for s in others:  # fills the LRU three times over
        cache.lexeme_base(dfa, s)
    misses = cache.misses
    for s in warmed:
        cache.lexeme_base(dfa, s)
    assert cache.misses == misses
    cache.lexeme_base(dfa, others[0])  # evicted long ago: computed again
    assert cache.misses == misses + 1



def sample_value(schema: dict):
    """A value valid under one of `VALUES`' schemas, with a lexeme that may end part way."""
    kind = schema.get("type")
    if "enum" in schema:
        return "off"
    if kind == "integer":
        return 40213
    if kind == "number":
        return 12.5e3
    if kind == "string":
        return "2024-05-01" if "format" in schema else "a é\\n"[: schema.get("maxLength", 9)]
    return [1, "x", {"k": None}]


@settings(max_examples=12, deadline=None, phases=[Phase.explicit, Phase.generate])
@given(names=NAMES, values=st.tuples(st.sampled_from([{"type": "integer"}, {"type": "string", "maxLength": 5},
                                                       {"type": "number", "minimum": 0}]), VALUES, VALUES),
       closed=st.booleans(), extra=st.text(alphabet="abk_xé\\\"", min_size=1, max_size=4))
def test_where_a_lexeme_may_end_the_mask_is_the_whole_walk(vocab, unsliced, names, values, closed, extra):
    """At a document state where a lexeme may end (a string's contents, a number, an enum, a key),
    the mask (the lexeme's own, its exits and the whole walk of the state after it, found from
    the root's children that spell a byte that may follow) is the unsliced walk's, stop tokens
    included, along a document of the schema (with an undeclared member where allowed)."""
    properties = {n: values[i % 3] for i, n in enumerate(names)}
    schema = {"type": "object", "properties": properties}
    instance = {n: sample_value(v) for n, v in properties.items()}
    if closed:
        schema["additionalProperties"] = False
    elif extra not in instance:
        instance[extra] = 7
    assert replay_ends_states(vocab, unsliced, schema, instance)
    either = {"anyOf": [values[0], schema]}  # a number or string alone, whose lexeme may end the document
    assert replay_ends_states(vocab, unsliced, either, sample_value(values[0]))


def replay_ends_states(vocab, unsliced, schema, instance) -> int:
    """Replay `instance`'s tokens, comparing the mask at each state where a lexeme may end with
    the unsliced walk's; how many there were."""
    from conftest_grammar import deepseek_tokenizer

    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    matcher = grammar.matcher()
    checked = 0
    for token in deepseek_tokenizer().encode(json.dumps(instance, ensure_ascii=False), add_special_tokens=False).ids:
        assert matcher.accept_token(token)
        where = grammar.dfa.lexeme_state(matcher._state) if grammar.dfa.lazy else None
        if where is not None and where.ends:
            checked += 1
            assert np.array_equal(matcher.next_token_mask(), unsliced.mask(grammar.dfa, matcher._state))
    assert matcher.can_terminate()
    return checked
