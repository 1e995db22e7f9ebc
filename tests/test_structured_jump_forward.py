"""ForcedTokenizer: which tokens of a forced string are safe to append without sampling."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.core.jump_forward import ForcedTokenizer
from formwork.grammar import GrammarCompiler, Vocabulary

EOS = 0
PIECES = [b'"', b"name", b'":', b" ", b"1", b"2", b" 1", b"na", b"me", b":", b"x", b"}", b"ok", b"okay"]
ID = {piece: i + 1 for i, piece in enumerate(PIECES)}


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary([None] + PIECES, stop_token_ids=[EOS])


def _scripted(*tokenizations: tuple[str, list[bytes]]):
    """An `encode` that returns fixed tokenizations (and records what it was asked)."""
    table = {text: [ID[p] for p in pieces] for text, pieces in tokenizations}
    asked: list[str] = []

    def encode(text: str) -> list[int]:
        asked.append(text)
        return table[text]

    return encode, asked


def test_drops_trailing_tokens_a_longer_allowed_token_could_replace(vocab):
    # forced: `"name": ` then a digit; the trailing " " could be the start of " 1" -> not forced
    encode, asked = _scripted(('"name": ', [b'"', b"name", b'":', b" "]))
    matcher = GrammarCompiler(vocab).compile_regex(r'"name": [12]').matcher()
    tokens = ForcedTokenizer(vocab, encode).forced_tokens(matcher, max_tokens=10)
    assert asked == ['"name": ']
    assert tokens == [ID[b'"'], ID[b"name"], ID[b'":']]
    assert matcher.num_accepted == 3 and matcher.accept_string(" 2")


def test_keeps_the_last_token_when_no_longer_token_can_follow(vocab):
    encode, _ = _scripted(('"name":', [b'"', b"name", b'":']))
    # the grammar branches after `"name":`, and no longer token starts with `":`
    matcher = GrammarCompiler(vocab).compile_regex(r'"name":(x|1)').matcher()
    assert ForcedTokenizer(vocab, encode).forced_tokens(matcher, 10) == [ID[b'"'], ID[b"name"], ID[b'":']]


def test_a_longer_token_the_grammar_forbids_does_not_block(vocab):
    # "ok" could extend to "okay", but the grammar wants "}" after "ok"
    encode, _ = _scripted(("ok", [b"ok"]))
    matcher = GrammarCompiler(vocab).compile_regex(r"ok(\}|\]|x)").matcher()
    assert ForcedTokenizer(vocab, encode).forced_tokens(matcher, 10) == [ID[b"ok"]]
    encode2, _ = _scripted(("ok", [b"ok"]))
    matcher2 = GrammarCompiler(vocab).compile_regex(r"ok(\}|ay)").matcher()
    assert ForcedTokenizer(vocab, encode2).forced_tokens(matcher2, 10) == []
    assert matcher2.num_accepted == 0


def test_mismatched_tokenization_and_limits_force_nothing_or_less(vocab):
    compiler = GrammarCompiler(vocab)
    wrong, _ = _scripted(('"name":x', [b'"', b"na", b":"]))  # spells `"na:`, not the forced text
    matcher = compiler.compile_regex(r'"name":x').matcher()
    assert ForcedTokenizer(vocab, wrong).forced_tokens(matcher, 10) == []
    assert matcher.num_accepted == 0
    good, _ = _scripted(('"name":x', [b'"', b"name", b'":', b"x"]))
    forced = ForcedTokenizer(vocab, good)
    assert forced.forced_tokens(matcher, 0) == []
    assert forced.forced_tokens(matcher, 2) == [ID[b'"'], ID[b"name"]]
    assert matcher.num_accepted == 2


def test_nothing_is_forced_where_the_grammar_branches(vocab):
    encode, asked = _scripted()
    matcher = GrammarCompiler(vocab).compile_regex(r"(1|2)x").matcher()
    assert ForcedTokenizer(vocab, encode).forced_tokens(matcher, 10) == []
    assert asked == []  # no forced string, no tokenizer call


# ---- properties with a real byte-level BPE --------------------------------------------------------

@pytest.fixture(scope="module")
def bpe():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_models import tiny_tokenizer_dir
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir())
    vocab = Vocabulary.from_pretrained(tokenizer)
    encode = lambda text: tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids  # noqa: E731
    return vocab, encode, GrammarCompiler(vocab)


TEXT = st.text(alphabet='abcdeflmnorstu "{}:,[]0129.', min_size=1, max_size=24)


@settings(deadline=None, max_examples=40, derandomize=True)
@given(text=TEXT)
def test_a_fully_forced_string_is_forced_as_its_own_tokenization(bpe, text):
    vocab, encode, compiler = bpe
    matcher = compiler.compile_choice([text]).matcher()
    tokens = ForcedTokenizer(vocab, encode).forced_tokens(matcher, 100)
    assert tokens == encode(text)  # nothing can follow the end, so every token is safe
    assert matcher.can_terminate()


@settings(deadline=None, max_examples=40, derandomize=True)
@given(text=TEXT, tails=st.lists(st.sampled_from(["1", "x", " a", '"', "}", "ab"]), min_size=2, max_size=3, unique=True))
def test_forced_tokens_spell_a_prefix_and_leave_the_matcher_consistent(bpe, text, tails):
    vocab, encode, compiler = bpe
    matcher = compiler.compile_choice([text + tail for tail in tails]).matcher()
    forced = matcher.find_jump_forward_string()
    tokens = ForcedTokenizer(vocab, encode).forced_tokens(matcher, 100)
    spelled = vocab.decode(tokens).decode("utf-8")
    assert forced.startswith(spelled)
    assert matcher.num_accepted == len(tokens)
    assert matcher.accept_string(forced[len(spelled):] + tails[0])  # the rest still leads to a match
