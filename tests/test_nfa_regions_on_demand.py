"""`NFA.region(k)` makes a region's `Region` object on first use: a document's first lexeme query
must not build every region of a large grammar, and each region must equal the one the full list
spells out."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.nfa import _region  # noqa: E402

#: an object under maxItems: each copy of the item holds its own lexeme regions
SCHEMA = {"type": "array", "maxItems": 12, "items": {
    "type": "object", "properties": {"a": {"type": "string", "maxLength": 9}, "b": {"type": "integer"}},
    "required": ["a", "b"], "additionalProperties": False}}


def test_a_lexeme_query_builds_only_its_region_and_each_equals_the_full_lists():
    vocab = byte_vocab()
    grammar = compile_json_schema(SCHEMA, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    dfa = grammar.dfa
    state = dfa.walk(1, b'[{"a":"xy')
    where = dfa.lexeme_state(state)
    assert where is not None
    nfa = dfa.nfa
    assert len(nfa.region_tuples) > 20
    assert 1 <= len(nfa._regions) <= 2 and "regions" not in vars(nfa)
    for k, spec in enumerate(nfa.region_tuples):
        assert vars(nfa.region(k)) == vars(_region(*spec))
    assert [vars(r) for r in nfa.regions] == [vars(nfa.region(k)) for k in range(len(nfa.region_tuples))]
