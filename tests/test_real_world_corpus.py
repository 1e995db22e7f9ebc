"""Real-world schemas: a sample of Snowplow's Iglu Central (tests/data/iglu-central, Apache 2.0)
through formwork, checked on generated instances (see `real_world_corpus`).

Every sampled schema that compiles accepts the valid instances hypothesis-jsonschema generates
(derandomised) and rejects their mutations that `jsonschema` calls invalid; a valid instance may
be rejected only for the bound on the nesting of open values (`max_nesting_depth`, "auto" = 6
levels inside a constrained schema), so it must be accepted once that bound is lifted. The
schemas refused today are pinned in `REFUSED` with their cause.
"""
import json
import random
import sys
from pathlib import Path

import pytest
from jsonschema import Draft4Validator

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab, spellings  # noqa: E402
from json_spelling_search import accepted_text, property_rank  # noqa: E402
from real_world_corpus import (  # noqa: E402
    iglu_documents, integral_floats, invalid_instances, make_validator, referenced, valid_instances,
)

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.errors import GrammarError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

DATA = Path(__file__).parent / "data" / "iglu-central" / "schemas"
DOCS = iglu_documents(DATA)
NAMES = sorted(uri[len("iglu:"):] for uri in DOCS if uri.startswith("iglu:"))
EXAMPLES = 5

#: name -> (exception class, text of its message), each with why it is refused today
REFUSED: dict[str, tuple[str, str]] = {}

_SELF = {"vendor": "com.acme", "name": "event", "format": "jsonschema", "version": "1-0-0"}
#: name -> instances checked instead of drawn ones where hypothesis-jsonschema draws none (the
#: self-describing meta-schema refers to draft-04's, which is recursive): valid ones, and ones with
#: equal items (1 == 1.0, member order free) in its unique arrays (`required`, `enum`, `type`) at
#: several depths
HAND_INSTANCES: dict[str, list] = {"com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0": [
    {"self": _SELF, "type": "object"}, {"self": _SELF, "required": ["a", "b"], "type": "object"},
    {"self": _SELF, "required": ["a", "a"]}, {"self": _SELF, "enum": [1, "1", [1], {"a": 1}]},
    {"self": _SELF, "enum": [1, 1.0]}, {"self": _SELF, "enum": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]},
    {"self": _SELF, "type": ["string", "null"]}, {"self": _SELF, "type": ["string", "string"]},
    {"self": _SELF, "properties": {"p": {"required": ["x", "y"]}, "q": {"enum": ["x", "y"]}}},
    {"self": _SELF, "properties": {"p": {"properties": {"q": {"required": ["x", "x"]}}}}},
    {"self": _SELF, "items": [{"enum": [[], [[]], [[], []]]}]},
    {"self": _SELF, "items": {"type": ["integer", "integer"]}},
    {"self": _SELF, "anyOf": [{"required": ["z"]}, {"enum": ["z", "z"]}]},
    {"self": _SELF, "required": []}, {"self": {"vendor": "com.acme"}, "type": "object"},
]}


def _compile(schema, registry, **options):
    vocab = byte_vocab()
    return compile_json_schema(schema, vocab, registry=registry or None,
                               compiler=GrammarCompiler(vocab, cache_enabled=False), **options)


def _small(value) -> bool:
    """Every object of `value` has at most 5 members (so `spellings` tries all their orders)."""
    if isinstance(value, dict):
        return len(value) <= 5 and all(_small(v) for v in value.values())
    return all(_small(v) for v in value) if isinstance(value, list) else True


def _spelled(grammar, value, integral: bool) -> bool:
    for text in spellings(value, integral_floats=integral):
        m = grammar.matcher()
        if m.accept_string(text) and m.can_terminate():
            return True
    return False


def test_sample_covers_the_corpus_shapes():
    keywords = json.dumps([DOCS["iglu:" + n] for n in NAMES])
    for shape in ('"enum"', '"pattern"', '"format": "date-time"', '"format": "uuid"', '"maxLength"',
                  '"$ref"', '"http://iglucentral.com/', '"minimum"', '"items"', '"oneOf"'):
        assert shape in keywords, shape
    assert set(REFUSED) | set(HAND_INSTANCES) <= set(NAMES)
    assert len(NAMES) >= 35


@pytest.mark.parametrize("name", NAMES)
def test_iglu_schema(name):
    schema = DOCS["iglu:" + name]
    registry = referenced(schema, DOCS)
    if name in REFUSED:
        cls, text = REFUSED[name]
        with pytest.raises(GrammarError) as info:
            _compile(schema, registry)
        assert (type(info.value).__name__, text in str(info.value)) == (cls, True), str(info.value)
        return
    grammar = _compile(schema, registry)
    validator = make_validator(schema, registry, Draft4Validator)
    integral = integral_floats(validator)
    rank = property_rank(schema, *registry.values())
    if name in HAND_INSTANCES:
        verdicts = [(validator.is_valid(v), accepted_text(grammar, v, rank, integral) is not None)
                    for v in HAND_INSTANCES[name]]
        assert {expected for expected, _ in verdicts} == {True, False}
        assert [v for v, (expected, got) in zip(HAND_INSTANCES[name], verdicts) if expected != got] == []
        return
    valid, why = valid_instances(schema, validator, registry, EXAMPLES, seed=None, seconds=30)
    assert valid, why
    rejected = [v for v in valid if accepted_text(grammar, v, rank, integral) is None]
    if rejected:
        exact = _compile(schema, registry, max_nesting_depth=None)
        assert [v for v in rejected if accepted_text(exact, v, rank, integral) is None] == []
    invalid = invalid_instances(valid, validator, random.Random(0), per_instance=2)
    assert invalid
    assert [t for v in invalid if (t := accepted_text(grammar, v, rank, integral))] == []
    for value in valid + invalid:  # the spelling search finds whatever `spellings` finds
        if _small(value) and _spelled(grammar, value, integral):
            assert accepted_text(grammar, value, rank, integral) is not None, value
