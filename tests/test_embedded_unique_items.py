"""A schema whose arrays need distinct unbounded items (the matcher compares them over whole JSON
documents) inside a larger language: a tagged region or the answer after reasoning. It is refused
naming `uniqueItems` (never compiled into a region no output can enter), or, when lenient, compiled
without the comparison and with a warning; finite item domains stay exact everywhere."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.core.grammar_backend import _compile  # noqa: E402
from formwork.grammar import compile_tags  # noqa: E402
from formwork.grammar.compiler import default_compiler  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError  # noqa: E402
from formwork.grammar.tags import TagSpecError  # noqa: E402

UNIQUE_STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
UNIQUE_BOOLS = {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True}


def _tags(schema: dict) -> dict:
    return {"tags": [{"begin": "<a>", "schema": schema, "end": "</a>"}], "triggers": ["<a>"]}


def test_a_tagged_region_refuses_unique_unbounded_items_naming_the_field() -> None:
    with pytest.raises(TagSpecError, match=r"uniqueItems at /uniqueItems: .*not inside a tagged region") as info:
        compile_tags(_tags(UNIQUE_STRINGS), byte_vocab())
    assert info.value.field == "tags[0].schema"


def test_a_tagged_region_keeps_finite_unique_items_exact() -> None:
    grammar = compile_tags(_tags(UNIQUE_BOOLS), byte_vocab())
    assert grammar.matcher().accept_string("x <a>[true,false]</a> y")
    assert not grammar.matcher().accept_string("x <a>[true,true]</a> y")


def test_reasoning_refuses_unique_unbounded_items_in_its_answer() -> None:
    vocab = byte_vocab()
    with pytest.raises(UnsupportedSchemaError, match="not after reasoning"):
        _compile({"json": UNIQUE_STRINGS, "reasoning": True}, vocab, default_compiler(vocab))


def test_the_whole_document_still_compares_unbounded_items() -> None:
    vocab = byte_vocab()
    grammar = _compile({"json": UNIQUE_STRINGS}, vocab, default_compiler(vocab))
    assert grammar.matcher().accept_string('["q","r"]')
    assert not grammar.matcher().accept_string('["q","q"]')
