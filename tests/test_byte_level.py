"""The byte-table decoder of byte-level BPE tokenizers (core/byte_level.py) emits the same chunks as the
tokenizer's own `DecodeStream` (detokenizer._StreamDecoder): token by token, after any prompt, with or
without special tokens, through incomplete and invalid UTF-8, unknown ids, and at the final flush."""
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_dir  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.byte_level import ByteLevelDecoder, ByteLevelTable  # noqa: E402
from formwork.grammar.vocabulary import bytes_to_unicode  # noqa: E402
from formwork.core.detokenizer import IncrementalDetokenizer, _StreamDecoder  # noqa: E402


@lru_cache(maxsize=None)
def tokenizer(name: str):
    return AutoTokenizer.from_pretrained(str(tiny_model_dir("llama") if name == "tiny" else deepseek_dir()))


@lru_cache(maxsize=None)
def table(name: str) -> ByteLevelTable:
    built = ByteLevelTable.of(tokenizer(name))
    assert built is not None
    return built


@lru_cache(maxsize=None)
def single_byte_ids(name: str) -> list[int]:
    """Ids of the tokens that stand for one byte (every byte has one in a byte-level vocabulary)."""
    backend = tokenizer(name).backend_tokenizer
    return [backend.token_to_id(c) for c in pre_tokenizers.ByteLevel.alphabet()]


def token_ids(name: str):
    """Ids mixing whole tokens, single bytes (to split and break UTF-8), special tokens and unknown ids."""
    size = tokenizer(name).backend_tokenizer.get_vocab_size(with_added_tokens=True)
    specials = sorted(tokenizer(name).backend_tokenizer.get_added_tokens_decoder())
    return st.one_of(st.integers(0, size - 1), st.sampled_from(single_byte_ids(name)),
                     st.sampled_from(specials), st.integers(size, size + 3))


def test_the_alphabet_is_the_byte_level_pre_tokenizers() -> None:
    alphabet = {c: b for b, c in bytes_to_unicode().items()}
    assert sorted(alphabet) == sorted(pre_tokenizers.ByteLevel.alphabet())
    assert sorted(alphabet.values()) == list(range(256))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["tiny", "deepseek"]), st.data(), st.booleans())
def test_chunks_equal_the_decode_streams(name: str, data, skip: bool) -> None:
    ids = data.draw(st.lists(token_ids(name), max_size=30), label="ids")
    context = data.draw(st.lists(token_ids(name), max_size=6), label="prompt tail")
    backend = tokenizer(name).backend_tokenizer
    stream = _StreamDecoder(backend, context, skip)
    by_table = ByteLevelDecoder(table(name), skip)
    assert [by_table.append(t) for t in ids] == [stream.append(t) for t in ids]
    assert by_table.flush() == stream.flush()


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_the_incremental_detokenizer_gives_the_same_text_with_a_table(data) -> None:
    tok = tokenizer("tiny")
    prompt = data.draw(st.lists(token_ids("tiny"), min_size=1, max_size=8), label="prompt")
    ids = data.draw(st.lists(token_ids("tiny"), max_size=30), label="ids")
    plain = IncrementalDetokenizer(tok, prompt, stop=["e "])
    fast = IncrementalDetokenizer(tok, prompt, stop=["e "], byte_table=table("tiny"))
    assert isinstance(fast._decoder, ByteLevelDecoder) and isinstance(plain._decoder, _StreamDecoder)
    for token_id in ids:
        new_plain, new_fast = plain.append(token_id), fast.append(token_id)
        assert new_fast == new_plain
        assert fast.check_stop(len(new_fast)) == plain.check_stop(len(new_plain))
        assert fast.visible_text(False) == plain.visible_text(False)
    assert fast.flush() == plain.flush()
    assert fast.output_text == plain.output_text


def test_a_tokenizer_without_a_byte_level_decoder_gets_no_table() -> None:
    vocab = {"[UNK]": 0, "\u2581a": 1, "b": 2}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.decoder = decoders.Metaspace()
    assert ByteLevelTable.of(PreTrainedTokenizerFast(tokenizer_object=backend)) is None
    assert ByteLevelTable.of(object()) is None  # not a fast tokenizer


def test_a_table_that_misreads_a_token_is_refused() -> None:
    backend = tokenizer("tiny").backend_tokenizer
    good = table("tiny")
    assert good.agrees_with(backend)
    kept = list(good.bytes[False])
    word = next(i for i, chunk in enumerate(kept) if len(chunk) > 1 and chunk.isascii())
    kept[word] = kept[word][::-1] + b"x"
    assert not ByteLevelTable(kept, set()).agrees_with(backend)


@pytest.mark.parametrize("skip", [True, False])
def test_special_tokens_follow_skip_special_tokens(skip: bool) -> None:
    tok = tokenizer("tiny")
    special = sorted(tok.backend_tokenizer.get_added_tokens_decoder())[0]
    decoder = ByteLevelDecoder(table("tiny"), skip)
    text = decoder.append(special)
    assert text == ("" if skip else tok.backend_tokenizer.id_to_token(special))
