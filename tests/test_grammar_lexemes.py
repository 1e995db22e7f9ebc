"""Lexeme masks (grammar/lexemes.py): a document state inside a string's contents, a number or an
embedded format gets its mask from the lexeme's own automaton plus the tokens that leave it, and
that mask must equal the plain walk of the whole vocabulary through the document automaton."""
import gc
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_tokenizer, node_prefixes  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.dfa import START  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED  # noqa: E402
from formwork.grammar.lexemes import is_lexeme, lexeme  # noqa: E402
from formwork.grammar.ir import And, lit, repeat, seq  # noqa: E402
from formwork.grammar.ir_chars import chars  # noqa: E402
from formwork.grammar.token_mask import TokenMaskCache  # noqa: E402

SCHEMAS = {
    "free strings": ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                      "required": ["a", "b"]}, {"a": "hello world, \"quoted\" \\ ok", "b": "x"}),
    "bounded string": ({"type": "object", "properties": {"name": {"type": "string", "minLength": 2,
                                                                   "maxLength": 20}}},
                       {"name": "Ada Lovelace"}),
    "numbers": ({"type": "array", "items": {"type": "number"}}, [1.5, -20, 3e5, 0.25]),
    "integer range": ({"type": "object", "properties": {"port": {"type": "integer", "minimum": 1,
                                                                  "maximum": 65535}}}, {"port": 8080}),
    "formats": ({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"},
                                                  "site": {"type": "string", "format": "uri"}}},
                {"when": "2024-05-01T12:30:00Z", "site": "https://example.org/a?b=c"}),
    "open object": ({"type": "object", "properties": {"id": {"type": "integer"}}},
                    {"id": 7, "note": "extra member", "n": 2}),
}


@pytest.fixture(scope="module")
def plain(vocab):
    """A mask cache that never decomposes: the reference."""
    return TokenMaskCache(vocab, use_lexemes=False)


def visited_states(grammar, text: str) -> list[int]:
    """The document states a replay of `text`'s tokens passes through."""
    m = grammar.matcher()
    states = []
    for token in deepseek_tokenizer().encode(text, add_special_tokens=False).ids:
        states.append(m._state)
        assert m.accept_token(token)
    return states


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_lexeme_masks_equal_the_plain_walk(name, vocab, plain):
    schema, instance = SCHEMAS[name]
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    states = visited_states(grammar, json.dumps(instance))
    inside = [s for s in states if grammar.dfa.lexeme_state(s) is not None]
    assert inside, "the replay never entered a lexeme"
    for s in inside:
        got = grammar.mask_cache.mask(grammar.dfa, s)
        assert np.array_equal(got, plain.mask(grammar.dfa, s)), f"state {s}"


def test_string_contents_share_one_lexeme_automaton_across_schemas(vocab):
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    first = compile_json_schema({"type": "object", "properties": {"q": {"type": "string"}}}, vocab,
                                compiler=compiler)
    second = compile_json_schema({"type": "array", "items": {"type": "string"}}, vocab, compiler=compiler)
    a = [first.dfa.lexeme_state(s) for s in visited_states(first, '{"q": "some words"}')]
    b = [second.dfa.lexeme_state(s) for s in visited_states(second, '["some words"]')]
    a = [x for x in a if x is not None]
    b = [x for x in b if x is not None]
    assert a and b
    assert a[-1].automaton is b[-1].automaton and a[-1].state == b[-1].state
    cache = compiler.mask_cache
    for s in visited_states(first, '{"q": "some words"}'):
        cache.mask(first.dfa, s)
    hits = cache.hits
    cache.mask(second.dfa, visited_states(second, '["some words"]')[-1])
    assert cache.hits > hits  # the contents' own mask came from the first schema


def test_a_marked_node_keeps_its_language(vocab):
    body = repeat(chars([("a", "z")]), 1, None)
    assert lexeme(body) is body and is_lexeme(body)
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    grammar = compiler.compile_grammar(seq(lit("<"), body, lit(">")))
    m = grammar.matcher()
    assert m.accept_string("<abc") and grammar.dfa.lexeme_state(m._state) is not None
    assert not m.accept_string("1") and m.accept_string("xyz>") and m.can_terminate()


@settings(max_examples=25, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12))
def test_any_string_value_replays_through_lexeme_masks(vocab, plain, text):
    """Every token of any string value is allowed by the decomposed mask, which equals the plain one."""
    schema = {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}
    grammar = compile_json_schema(schema, vocab)
    m = grammar.matcher()
    for token in deepseek_tokenizer().encode(json.dumps({"s": text}), add_special_tokens=False).ids:
        words = m.next_token_mask()
        if grammar.dfa.lexeme_state(m._state) is not None:
            assert np.array_equal(words, plain.mask(grammar.dfa, m._state))
        assert words.view(np.uint8)[token >> 3] >> (token & 7) & 1
        assert m.accept_token(token)
    assert m.can_terminate()


def test_exit_seeds_are_the_follow_byte_after_a_complete_prefix():
    from formwork.grammar.automaton import AutomatonBuilder
    from formwork.grammar.dfa import START
    from formwork.grammar.follow_exits import exit_nodes_after, exit_seeds, exit_seeds_after
    from formwork.grammar.token_trie import TokenTrie

    tokens = [b'ab"', b'a"x', b'"', b'abc"}', b'x', b'a1"', b'"q"', b'zz']
    trie = TokenTrie(tokens, len(tokens))
    word = AutomatonBuilder().eager(repeat(chars([("a", "z")]), 1, None))  # one or more letters
    prefixes = node_prefixes(trie)
    got = {prefixes[n] for n in exit_seeds(trie, word, START, ord('"'))}
    # 'a1"' never completes a word before '"'; '"' and '"q"' would need an empty word first
    assert got == {b'ab"', b'a"', b'abc"'}
    assert exit_seeds(trie, word, START, ord("}")) == ()
    # all the bytes after a lexeme at once: only those with seeds, each with its own
    after = exit_seeds_after(trie, word, START, b'"1}')
    assert after == tuple((byte, exit_seeds(trie, word, START, byte)) for byte in b'"1')
    assert {prefixes[n] for n in after[1][1]} == {b"a1"}  # 'a' is a word, then '1'
    assert exit_seeds_after(trie, word, START, b"}") == ()
    kept = exit_nodes_after(trie, word, START, b'"1}')  # what the memo keeps: every byte's seeds, ascending
    assert np.frombuffer(kept, dtype=np.int64).tolist() == sorted(n for _, seeds in after for n in seeds)
    gc.collect()
    assert not gc.is_tracked(kept)  # kept as bytes: full collections do not walk the memo


def test_automaton_tables_are_invisible_to_the_cycle_collector(vocab):
    """State sets are tuples of ints, which the collector stops tracking, and NFA moves one bytes
    object: a process holding many automata must not re-scan them at every collection."""
    import gc

    grammar = compile_json_schema({"type": "object", "properties": {"a": {"type": "string"}}}, vocab,
                                  compiler=GrammarCompiler(vocab, cache_enabled=False))
    visited_states(grammar, '{"a": "xyz"}')
    builder = grammar.dfa._b
    assert not [x for x in builder.sets if gc.is_tracked(x)]  # untracked when the core makes them
    gc.collect()
    gc.collect()  # a tuple of tuples is untracked once its members are
    assert not [x for x in builder.sets if gc.is_tracked(x)]
    assert type(builder._nfa.moves) is bytes and not gc.is_tracked(builder._nfa.moves)


def test_a_lexeme_costs_nothing_until_reached(vocab):
    """A long bounded string is spliced in as a region whose NFA states are read on first use."""
    schema = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "bio": {"type": "string", "maxLength": 300}}}
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    builder = grammar.dfa._b
    nfa = builder._nfa
    assert nfa.total_states - nfa.num_states > 300 * 5  # the string's states: numbers only
    m = grammar.matcher()
    assert m.accept_string('{"id": 7, "bio": "ab')
    assert 0 < builder.core.loaded() < nfa.num_states + 100
    assert m.accept_string('c' * 298 + '"}') and m.can_terminate()
    assert not grammar.matcher().accept_string('{"bio": "' + 'c' * 301 + '"}')


def test_a_schema_compiled_twice_without_the_cache_is_built_twice(vocab):
    """With the compiled-grammar cache off, nothing keeps a whole schema's automaton (its pieces,
    such as string contents, are shared)."""
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    first = compile_json_schema(schema, vocab, compiler=compiler)
    second = compile_json_schema(schema, vocab, compiler=compiler)
    assert first.dfa is not second.dfa


@pytest.mark.parametrize("bounds", [(0, 5), (2, 20), (3, 300), (0, 400)])
def test_bounded_strings_use_the_shared_counted_automaton_and_keep_exact_masks(vocab, plain, bounds):
    lo, hi = bounds
    schema = {"type": "array", "items": {"type": "string", "minLength": lo, "maxLength": hi}}
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    value = ('é"\\\n x✓' * 60)[:hi]
    states = visited_states(grammar, json.dumps([value, value[:lo]], ensure_ascii=False))
    inside = [grammar.dfa.lexeme_state(s) for s in states]
    counted = [w for w in inside if w is not None and w.counted is not None]
    assert any(w.counted.past_min for w in counted), "no state past the minimum used the shared automaton"
    assert any(not w.counted.past_min for w in counted) == (lo > 0), "states before the minimum: shared too"
    for s in states:
        if grammar.dfa.lexeme_state(s) is not None:
            assert np.array_equal(grammar.mask_cache.mask(grammar.dfa, s), plain.mask(grammar.dfa, s))


def test_equal_repetitions_left_share_one_place(vocab):
    """maxLength 10 after 4 characters and maxLength 8 after 2 leave 6: one shared state."""
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    places = []
    for hi, text in ((10, "abcd"), (8, "ab")):
        grammar = compile_json_schema({"type": "string", "maxLength": hi}, vocab, compiler=compiler)
        m = grammar.matcher()
        assert m.accept_string('"' + text)
        where = grammar.dfa.lexeme_state(m._state)
        places.append(where.counted)
    assert places[0] is not None and places[0].automaton is places[1].automaton
    assert places[0].state == places[1].state


def test_trie_memo_builds_once_and_evicts_the_least_recent():
    from formwork.grammar.token_trie import TokenTrie
    from formwork.grammar.trie_memo import TrieMemo

    trie = TokenTrie([b"a", b"b"], 2)
    memo: TrieMemo[str] = TrieMemo(2)
    built = []

    def build(key):
        built.append(key)
        return f"value {key}"

    assert memo.get(trie, 1, lambda: build(1)) == "value 1"
    assert memo.get(trie, 1, lambda: build(1)) == "value 1"
    memo.get(trie, 2, lambda: build(2))
    memo.get(trie, 1, lambda: build(1))  # 1 is now the most recent
    memo.get(trie, 3, lambda: build(3))  # evicts 2
    memo.get(trie, 1, lambda: build(1))
    memo.get(trie, 2, lambda: build(2))
    assert built == [1, 2, 3, 2]


def test_trie_memo_keeps_a_table_per_trie_and_lets_a_dead_trie_go():
    import gc
    import weakref

    from formwork.grammar.token_trie import TokenTrie
    from formwork.grammar.trie_memo import TrieMemo

    first, second = TokenTrie([b"a"], 1), TokenTrie([b"b"], 1)
    memo: TrieMemo[str] = TrieMemo(4)
    assert memo.get(first, 1, lambda: "first") == "first"
    assert memo.get(second, 1, lambda: "second") == "second"  # the last-trie shortcut moves on
    assert memo.get(first, 1, lambda: "built again") == "first"
    assert memo.get(second, 1, lambda: "built again") == "second"
    table = weakref.ref(memo._table(second))
    del second
    gc.collect()
    assert table() is None and len(memo._tables) == 1  # the dead trie's table is gone too
    assert memo.get(first, 1, lambda: "built again") == "first"


def test_prepare_computes_the_string_masks_every_schema_shares(vocab, plain):
    from formwork.grammar.automaton import AutomatonBuilder
    from formwork.grammar.json_schema.automata import SHARED
    from formwork.grammar.token_mask import _WITHOUT_STOPS
    SHARED._builder = AutomatonBuilder()  # as a fresh process has it: nothing built yet
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    compiler.prepare()
    before = compiler.mask_cache.keys()
    grammar = compile_json_schema({"type": "object", "properties": {"a": {"type": "string", "maxLength": 37}}},
                                  vocab, compiler=compiler)
    matcher = grammar.matcher()
    assert matcher.accept_string('{"a": "Ada')
    where = grammar.dfa.lexeme_state(matcher._state)
    assert where.counted is not None and where.counted.past_min
    key = (_WITHOUT_STOPS, where.counted.automaton.state_key(where.counted.state))
    assert key in compiler.mask_cache.keys()  # computed by prepare(), before any schema
    mask = matcher.next_token_mask()
    new_keys = compiler.mask_cache.keys() - before
    assert new_keys and all(k[0] == grammar.dfa.state_key(START)[0] for k in new_keys)  # document states only
    assert np.array_equal(mask, plain.mask(grammar.dfa, matcher._state))
    # and the automata of every format, which no schema has asked for yet
    from formwork.grammar.json_schema.formats import SUPPORTED
    from formwork.grammar.json_schema.pieces import encoded_format
    assert all(encoded_format(name) in SHARED._builder._eager for name in SUPPORTED)


def test_a_renewed_shared_builder_keeps_the_format_automata():
    from formwork.grammar.ir import lit
    from formwork.grammar.json_schema.automata import SharedAutomata, _format_nodes

    shared = SharedAutomata(max_compilations=1)
    shared.warm_formats()
    kept = {node: shared._builder._eager[node] for node in _format_nodes()}
    first = shared._builder
    shared.compile(lit("a"))
    shared.compile(lit("b"))  # the second compilation renews the builder
    assert shared._builder is not first
    assert all(shared._builder._eager[node] is dfa for node, dfa in kept.items())
    assert lit("a") not in shared._builder._memo  # everything else starts afresh


def test_a_renewed_shared_builder_compiles_a_whole_document_of_a_kept_automaton_as_that_automaton():
    # a schema whose whole language is the bounded any-JSON value (an anyOf with a branch of
    # annotations) compiled after a renewal: its DFA, not a new one built afresh (~60 ms)
    from formwork.grammar.ir import lit
    from formwork.grammar.json_schema.automata import SharedAutomata, _any_value_node, _format_nodes

    shared = SharedAutomata(max_compilations=1)
    shared.warm_formats()
    format_dfa = shared._builder._eager[_format_nodes()[0]]
    shared._builder.eager(_any_value_node())
    any_dfa = shared._builder._eager[_any_value_node()]
    shared.compile(lit("a"))
    shared.compile(lit("b"))  # renewed
    assert shared.compile(_format_nodes()[0], keep=False) is format_dfa
    assert shared.compile(_any_value_node(), keep=False) is any_dfa


def test_warmed_format_automata_hold_their_region_tables():
    """A schema embedding a format's DFA finds the tables its NFA region needs built at start-up
    (email's took ~1 ms of the first schema with that format)."""
    from formwork.grammar.json_schema.automata import SharedAutomata, _format_nodes

    shared = SharedAutomata()
    shared.warm_formats()
    for node in _format_nodes():
        cache = shared._builder._eager[node]._cache
        assert {"byte_ranges", "accepting_bytes", "spec_tail", "cut_mask"} <= cache.keys()


def test_a_state_at_two_places_of_one_embedded_dfa_lies_in_no_lexeme():
    item = repeat(lit("xy"), 1, 2)
    dfa = SHARED.compile(repeat(And(item, item), 0, None), CompileBudget().start(), keep=False)
    state = dfa.walk(1, b"xy")  # inside the embedded DFA after "xy", and at its start again
    assert dfa.lexeme_state(state) is None and dfa.accepts(b"xyxyxy")


@pytest.mark.parametrize("inside", [b'{"\\', b'{"a\\', b'{"id":1,"\\', b'{"\\u00'])
def test_without_lexemes_a_key_mid_escape_allows_only_the_escape(vocab, plain, unsliced, inside):
    """Mid-escape in an open object's undeclared key the document allows only the escape's rest: the
    open-lexeme slice shortcut (every token of string characters) must not apply there, lexemes or not."""
    grammar = compile_json_schema(SCHEMAS["open object"][0], vocab)
    state = grammar.dfa.walk(START, inside)
    mask = plain.mask(grammar.dfa, state)
    assert np.array_equal(mask, unsliced.mask(grammar.dfa, state))
    allowed = {vocab.token_bytes[t] for t in np.flatnonzero(np.unpackbits(
        mask.view(np.uint8), bitorder="little")[: vocab.vocab_size])}
    assert b"!" not in allowed and b"#" not in allowed


@settings(max_examples=15, deadline=None)
@given(st.lists(st.text(alphabet="abcdef_", min_size=1, max_size=5), min_size=1, max_size=4, unique=True),
       st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8))
def test_undeclared_key_masks_equal_the_unsliced_walk(vocab, unsliced, names, key):
    """A key of an open object beside declared names: inside the key lexeme each document mask is
    the whole walk's, and the lexeme's shared mask (`lexeme_base`, computed without keeping the
    mask with stop tokens) is the whole walk's mask of the lexeme state less the stop tokens."""
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names}}
    grammar = compile_json_schema(schema, vocab)
    m = grammar.matcher()
    seen = 0
    text = json.dumps({key: 1}, ensure_ascii=False)
    for token in deepseek_tokenizer().encode(text, add_special_tokens=False).ids:
        where = grammar.dfa.lexeme_state(m._state)
        if where is not None:
            seen += 1
            assert np.array_equal(m.next_token_mask(), unsliced.mask(grammar.dfa, m._state))
            base = grammar.mask_cache.lexeme_base(where.automaton, where.state)
            assert np.array_equal(base, unsliced.mask(where.automaton, where.state) & unsliced.text_words)
        assert m.accept_token(token)
    assert m.can_terminate() and seen


def test_empty_string_contents_mark_no_lexeme() -> None:
    # `Empty` equals every Empty node: marked once, each one in every IR would read as a lexeme
    from formwork.grammar.ir import EMPTY, NOTHING
    from formwork.grammar.json_schema import lower_json_schema

    lower_json_schema({"type": "string", "maxLength": 0})
    assert not is_lexeme(EMPTY)
    assert lexeme(EMPTY) is EMPTY and lexeme(NOTHING) is NOTHING
    assert not is_lexeme(EMPTY) and not is_lexeme(NOTHING)
