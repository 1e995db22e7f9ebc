"""The vocabulary walk of a state (token_mask.walk_trie) switches to a node-by-node descent in Python
below a few live nodes with small subtrees; the masks must equal the level-by-level numpy walk."""
import json
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_tokenizer, deepseek_vocab  # noqa: E402

from formwork.grammar import token_mask  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

CASES = [
    ({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "tags": {
        "type": "array", "items": {"enum": ["red", "green", "blue"]}}, "n": {"type": "integer"}},
      "required": ["name", "tags", "n"], "additionalProperties": False},
     {"name": "Ada", "tags": ["red", "blue"], "n": -42}),
    ({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}},
     {"when": "2024-02-29", "extra": [1, {"k": None}]}),
]


@pytest.mark.parametrize("schema, instance", CASES)
def test_python_descent_gives_the_numpy_walk_masks(schema, instance):
    vocab = deepseek_vocab()
    cache = token_mask.TokenMaskCache(vocab, use_lexemes=False)
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    matcher = grammar.matcher()
    descended = 0
    real_descend = token_mask.descend

    def counting_descend(*args):
        nonlocal descended
        descended += 1
        return real_descend(*args)

    for token in deepseek_tokenizer().encode(json.dumps(instance), add_special_tokens=False).ids:
        with mock.patch.object(token_mask, "descend", counting_descend):
            mixed = cache._compute(grammar.dfa, matcher._state, None)
        with mock.patch.object(token_mask, "few_small_subtrees", lambda *args: False):
            levels = cache._compute(grammar.dfa, matcher._state, None)
        assert np.array_equal(mixed, levels)
        assert matcher.accept_token(token)
    assert descended  # the Python descent was taken somewhere on the way
