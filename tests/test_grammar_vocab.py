"""Vocabulary extraction: exact bytes per token for the three decoding kinds, stops, padding."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import (  # noqa: E402
    brute_force_allowed, byte_level_tokenizer, deepseek_tokenizer, deepseek_vocab, sentencepiece_tokenizer, unpack_mask,
    wordlevel_tokenizer,
)

from formwork.grammar import (  # noqa: E402
    Vocabulary, VocabularyError, allocate_token_bitmask, compile_regex,
)


def test_deepseek_vocabulary_shape_and_stops() -> None:
    vocab = deepseek_vocab()
    tok = deepseek_tokenizer()
    assert vocab.vocab_size == vocab.tokenizer_size == 129280
    assert vocab.stop_token_ids == (tok.token_to_id("<｜end▁of▁sentence｜>"),)
    # added tokens (special or not, e.g. <｜User｜>) never produce text
    for i, added in tok.get_added_tokens_decoder().items():
        assert vocab.token_bytes[i] is None, added.content
    assert vocab.token_bytes[tok.token_to_id("Ġhello")] == b" hello"
    assert vocab.token_bytes[tok.token_to_id("Ċ")] == b"\n"


@settings(deadline=None, max_examples=30, database=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40))
def test_deepseek_concatenated_bytes_round_trip(text: str) -> None:
    vocab, tok = deepseek_vocab(), deepseek_tokenizer()
    ids = tok.encode(text, add_special_tokens=False).ids
    assert vocab.decode(ids) == text.encode("utf-8")


def test_deepseek_single_tokens_decode_like_the_tokenizer() -> None:
    vocab, tok = deepseek_vocab(), deepseek_tokenizer()
    rng = np.random.default_rng(0)
    for i in rng.choice(128000, size=400, replace=False).tolist():
        data = vocab.token_bytes[i]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a partial UTF-8 character: the tokenizer would print U+FFFD
        assert tok.decode([i]) == text, i


def test_sentencepiece_byte_fallback() -> None:
    tok = sentencepiece_tokenizer()
    vocab = Vocabulary.from_pretrained(tok, stop_token_ids=[tok.token_to_id("</s>")])
    assert vocab.token_bytes[tok.token_to_id("<0x0A>")] == b"\n"
    assert vocab.token_bytes[tok.token_to_id("▁hello")] == b" hello"
    assert vocab.token_bytes[tok.token_to_id("<s>")] is None
    for text in ["hello ab", "ab\né 日本 🎉", "c  a"]:
        ids = tok.encode(text).ids
        # the normaliser prepends "▁"; the decoder's Strip removes it again for display
        assert vocab.decode(ids) == (" " + text).encode()
        assert tok.decode(ids) == text


def test_wordlevel_plain_vocabulary_and_transformers_wrapper(tmp_path: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    tok = wordlevel_tokenizer()
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="[EOS]", unk_token="[UNK]")
    vocab = Vocabulary.from_pretrained(wrapped)
    assert vocab.stop_token_ids == (tok.token_to_id("[EOS]"),)
    assert vocab.token_bytes[tok.token_to_id("日本")] == "日本".encode()
    assert vocab.token_bytes[tok.token_to_id("[UNK]")] is None
    assert vocab.decode(tok.encode("hello , world !").ids) == b"hello,world!"


def test_byte_level_directory_with_generation_config(tmp_path: Path) -> None:
    texts = ['{"name": "héllo", "n": 12}', "日本語 text\n\tmore", "🎉 party"] * 30
    tok = byte_level_tokenizer(texts)
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|endoftext|>"}))
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [0, 7]}))
    vocab = Vocabulary.from_pretrained(tmp_path)
    assert vocab.stop_token_ids == (0, 7)
    assert vocab.token_bytes[7] is None  # a stop token never counts as text
    for text in texts[:3]:
        ids = tok.encode(text).ids
        assert vocab.decode(ids) == text.encode()
    same = Vocabulary.from_pretrained(tmp_path / "tokenizer.json")
    assert same.token_bytes == vocab.token_bytes


def test_vocab_size_padding_is_always_masked() -> None:
    tok = byte_level_tokenizer(["abc def"] * 10, vocab_size=300)
    size = tok.get_vocab_size()
    vocab = Vocabulary.from_pretrained(tok, vocab_size=size + 45, stop_token_ids=[0])
    assert vocab.vocab_size == size + 45 and len(vocab.token_bytes) == size + 45
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    assert bitmask.shape == (1, (size + 45 + 31) // 32)
    grammar = compile_regex(r"(.|\n)*", vocab)
    grammar.matcher().fill_next_token_bitmask(bitmask)
    allowed = unpack_mask(bitmask[0], vocab.vocab_size)
    assert (allowed == brute_force_allowed(vocab, grammar.dfa, 1)).all()
    assert allowed[:size].sum() > 150 and not allowed[size:].any()
    bits = np.unpackbits(bitmask[0].numpy().view(np.uint8), bitorder="little")
    assert not bits[vocab.vocab_size:].any()


def test_bad_inputs_raise() -> None:
    with pytest.raises(VocabularyError, match="smaller"):
        Vocabulary.from_pretrained(wordlevel_tokenizer(), vocab_size=3)
    with pytest.raises(VocabularyError, match="no tokenizer.json"):
        Vocabulary.from_pretrained("/nonexistent/dir")
    with pytest.raises(VocabularyError, match="cannot read"):
        Vocabulary.from_pretrained(42)
    with pytest.raises(VocabularyError, match="stop token"):
        Vocabulary([b"a", b"b"], stop_token_ids=[5])
