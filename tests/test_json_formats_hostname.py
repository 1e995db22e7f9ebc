"""`format: hostname` is exact apart from A-labels: LDH labels of 1 to 63 characters (no hyphen at either end),
any number of them within 253 characters. The labels come from `formats.format_node` and the string lowering
bounds the length (with the schema's own maxLength, the smaller wins)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.errors import EmptyLanguageError  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


@pytest.fixture(scope="module")
def compile_schema():
    vocab = byte_vocab()
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    return lambda schema: compile_json_schema(schema, vocab, compiler=compiler)


def _accepts(grammar, text: str) -> bool:
    matcher = grammar.matcher(max_step_seconds=None)
    return matcher.accept_string(json.dumps(text)) and matcher.can_terminate()


def _is_hostname(text: str, max_length: int = 253) -> bool:
    labels = text.split(".")
    return (len(text) <= max_length and all(_LABEL.fullmatch(label) for label in labels)
            and not any(len(label) >= 4 and label[2:4] == "--" for label in labels))


_LABELS = st.one_of(st.text("ab9-", min_size=1, max_size=3), st.integers(1, 64).map(lambda n: "x" * n),
                    st.sampled_from(["xn--a", "ab--c", "a-", "-a", "A0", ""]))


@settings(max_examples=150, deadline=None)
@given(labels=st.lists(_LABELS, min_size=1, max_size=40))
def test_hostnames_are_accepted_exactly_when_valid(compile_schema, labels):
    grammar = compile_schema({"type": "string", "format": "hostname"})
    text = ".".join(labels)
    assert _accepts(grammar, text) == _is_hostname(text), text


def test_many_labels_and_the_253_character_bound(compile_schema):
    grammar = compile_schema({"type": "string", "format": "hostname"})
    longest = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
    assert len(longest) == 253 and _accepts(grammar, longest) and not _accepts(grammar, longest + "d")
    assert _accepts(grammar, ".".join(["a"] * 20))  # 20 labels: outside the old shapes (15 of up to 15)
    assert _accepts(grammar, "axUZQQX.Iue0pN5j-p36jNGZdjMT8Qf6oxY.Y.J.Jp9vUPuIiFP2.V.X.U.zGf.Nq.G.A.GCeJ53MU0.OL.Bs")


def test_a_smaller_max_length_wins_and_a_larger_min_length_leaves_nothing(compile_schema):
    short = compile_schema({"type": "string", "format": "hostname", "maxLength": 5})
    assert _accepts(short, "ab.cd") and not _accepts(short, "ab.cde")
    wide = compile_schema({"type": "string", "format": "hostname", "maxLength": 1000})
    assert not _accepts(wide, ".".join(["a" * 63] * 4))  # 255 characters: still over 253
    with pytest.raises(EmptyLanguageError):  # no hostname has 254 characters
        compile_schema({"type": "string", "format": "hostname", "minLength": 254})
