"""Recursive schemas' masks with the first tables built at compile time (`ConfigMasks.warm`) and
without: along random token paths both equal the tokens `accept_token` takes (brute force over a
small vocabulary of JSON pieces), on random recursive schemas (hypothesis)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from mask_probe import accepted_tokens, mask_of  # noqa: E402

from formwork.grammar import GrammarCompiler, Vocabulary  # noqa: E402
from formwork.grammar.cfg import masks as cfg_masks  # noqa: E402
from formwork.grammar.cfg.configs import ConfigDFA  # noqa: E402
from formwork.grammar.errors import EmptyLanguageError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

NAMES = ["a", "kids", "next", "v"]
PIECES = [b"{", b"}", b"[", b"]", b",", b":", b'"', b" ", b"null", b"true", b"1", b"0", b"-", b"a", b"k",
          b"x", b'{"', b'":', b'", "', b'":[', b'":{"', b"}]", b"]}", b", ", b'}, {"', b"null}"] + \
    [b'"' + name.encode() + b'"' for name in NAMES] + [name.encode() for name in NAMES]
TOKENS = list(dict.fromkeys(PIECES)) + [None]  # the last id is the stop token


def vocabulary() -> Vocabulary:
    """A fresh vocabulary (its own trie, so no terminal table is shared with another)."""
    return Vocabulary(TOKENS, stop_token_ids=[len(TOKENS) - 1])


@st.composite
def recursive_schemas(draw) -> dict:
    """An object schema with 1-4 members, at least one reaching `#` again (directly, through an
    array, or beside null), the others scalars."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    back = draw(st.sampled_from(names))
    ref = st.sampled_from([{"$ref": "#"}, {"type": "array", "items": {"$ref": "#"}},
                           {"anyOf": [{"type": "null"}, {"$ref": "#"}]}])
    scalar = st.sampled_from([{"type": "integer"}, {"type": "string", "maxLength": 2}, {"type": "boolean"},
                              {"enum": ["a", 1, None]}])
    properties = {name: draw(ref) if name == back else draw(st.one_of(ref, scalar)) for name in names}
    required = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    return {"type": "object", "properties": properties, "required": [n for n in required if n != back],
            "additionalProperties": draw(st.booleans())}


def compiled(schema: dict, seconds: float, monkeypatch):
    monkeypatch.setattr(cfg_masks, "WARM_SECONDS", seconds)
    vocab = vocabulary()
    return compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False)), vocab


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema=recursive_schemas(), data=st.data())
def test_warmed_and_cold_masks_are_the_accepted_tokens(schema, data, monkeypatch):
    try:
        warm, vocab = compiled(schema, 1.0, monkeypatch)
        cold, _ = compiled(schema, -1.0, monkeypatch)  # no time at all
    except EmptyLanguageError:
        return
    assert isinstance(warm.dfa, ConfigDFA)  # every schema drawn recurses
    assert warm.dfa.masks._tables and not cold.dfa.masks._tables  # built at compile time, or not
    size = vocab.vocab_size
    hot, slow = warm.matcher(max_step_seconds=None), cold.matcher(max_step_seconds=None)
    for _ in range(data.draw(st.integers(1, 20), label="steps")):
        mask = mask_of(hot, size)
        assert np.array_equal(mask, mask_of(slow, size))
        assert np.array_equal(mask, accepted_tokens(hot, size))
        choices = np.flatnonzero(mask[:-1])  # not the stop token
        if not len(choices):
            break
        token = int(data.draw(st.sampled_from(choices.tolist()), label="token"))
        assert hot.accept_token(token) and slow.accept_token(token)
