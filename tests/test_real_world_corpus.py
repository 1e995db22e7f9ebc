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
REFUSED: dict[str, tuple[str, str]] = {
    # the meta-schema itself: its allOf refers to draft-04's meta-schema (so it is read as draft-04),
    # which is recursive, and whose unique arrays (`required`, `enum`) the matcher compares only
    # in regular schemas
    "com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0": (
        "UnsupportedSchemaError", "tracked in regular schemas only; this schema is recursive"),
}


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
    assert set(REFUSED) <= set(NAMES)
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
