"""Compiles on several threads at once (each on its own fork of the shared automaton builder) give
the same grammars as one at a time: schemas sharing pieces (formats, patterns, bounded strings)
compiled side by side accept and reject the same documents."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from formwork.grammar import GrammarCompiler, Vocabulary
from formwork.grammar.json_schema import compile_json_schema

VOCAB = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])


def schema(i: int) -> dict:
    """Schema `i`: its own property names over pieces every schema shares."""
    return {"type": "object", "required": [f"id{i}", "day"], "additionalProperties": False, "properties": {
        f"id{i}": {"type": "string", "pattern": "^[a-f0-9]{4,8}$"},
        "day": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5 + i % 3}, "maxItems": 3},
        "kind": {"anyOf": [{"const": f"k{i}"}, {"type": "integer", "minimum": i}]}}}


def documents(i: int) -> list[tuple[str, bool]]:
    return [(f'{{"id{i}": "beef", "day": "2024-02-29"}}', True),
            (f'{{"id{i}": "beef01", "day": "2024-02-29", "tags": ["ab"], "kind": "k{i}"}}', True),
            (f'{{"id{i}": "beef", "day": "2024-02-29", "kind": {i + 3}}}', True),
            (f'{{"id{i}": "xyz1", "day": "2024-02-29"}}', False),
            (f'{{"id{i}": "beef", "day": "2024-13-01"}}', False),
            (f'{{"id{i}": "beef", "day": "2024-02-29", "kind": {i - 1}}}', False),
            (f'{{"id{i + 1}": "beef", "day": "2024-02-29"}}', False)]


def verdicts(i: int) -> list[bool]:
    grammar = compile_json_schema(schema(i), VOCAB, compiler=GrammarCompiler(VOCAB, cache_enabled=False))
    return [grammar.matcher().accept_string(text) for text, _ in documents(i)]


def test_side_by_side_compiles_match_the_expected_verdicts():
    with ThreadPoolExecutor(max_workers=6) as pool:
        got = list(pool.map(verdicts, range(12)))
    assert got == [[ok for _, ok in documents(i)] for i in range(12)]
