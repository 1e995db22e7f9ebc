"""Incremental detokenization: the fast path (`DecodeStream`) gives the same text as the sliding-window
decoder and as decoding the whole output at once, on real tokenizers (the demo model's SentencePiece-style
BPE and DeepSeek's 129k byte-level BPE), with characters split across tokens and stop strings."""
import sys
from functools import lru_cache
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_dir  # noqa: E402

from formwork.core.demo import DEMO_MODEL_DIR  # noqa: E402
from formwork.core.detokenizer import IncrementalDetokenizer, _StreamDecoder, _WindowDecoder  # noqa: E402

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


@lru_cache(maxsize=None)
def tokenizer(name: str):
    return AutoTokenizer.from_pretrained(str(DEMO_MODEL_DIR) if name == "demo" else deepseek_dir())


def _run(detok: IncrementalDetokenizer, ids: list[int]) -> str:
    for token_id in ids:
        detok.append(token_id)
    detok.flush()
    return detok.output_text


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["demo", "deepseek"]), st.text(alphabet="abc xyz.", max_size=12), TEXT)
def test_stream_and_window_decoders_agree_with_whole_decoding(name: str, prompt: str, output: str) -> None:
    tok = tokenizer(name)
    prompt_ids = tok.encode(prompt, add_special_tokens=False)
    ids = tok.encode(output, add_special_tokens=False)
    fast = IncrementalDetokenizer(tok, prompt_ids)
    assert isinstance(fast._decoder, _StreamDecoder)
    window = IncrementalDetokenizer(tok, prompt_ids)
    window._decoder = _WindowDecoder(tok, prompt_ids[-5:], True)
    whole = tok.decode(prompt_ids + ids, skip_special_tokens=True)[len(tok.decode(prompt_ids)):]
    assert _run(fast, ids) == _run(window, ids) == whole


def test_a_character_split_across_tokens_appears_once_complete() -> None:
    tok = tokenizer("deepseek")
    ids = tok.encode("\u6f22\u5b57 \U0001f680", add_special_tokens=False)
    detok = IncrementalDetokenizer(tok, [])
    pieces = [detok.append(token_id) for token_id in ids]
    assert "".join(pieces) == "\u6f22\u5b57 \U0001f680"
    assert all("\ufffd" not in piece for piece in pieces)


def test_a_prompt_ending_inside_a_character_is_not_repeated() -> None:
    tok = tokenizer("demo")
    ids = tok.encode("go \U0001f680 now", add_special_tokens=False)
    cut = next(i for i in range(1, len(ids)) if tok.decode(ids[:i]).endswith("\ufffd"))
    detok = IncrementalDetokenizer(tok, ids[:cut])
    assert "\ufffd" not in _run(detok, tok.encode(" done", add_special_tokens=False))


def test_stop_strings_cut_the_stream_text() -> None:
    tok = tokenizer("demo")
    detok = IncrementalDetokenizer(tok, [], stop=["STOP"])
    for token_id in tok.encode("hello STOP world", add_special_tokens=False):
        new = detok.append(token_id)
        if detok.check_stop(len(new)):
            break
    assert detok.output_text == "hello "


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["demo", "deepseek"]), TEXT, st.integers(0, 40))
def test_extend_is_append_of_each_token(name: str, output: str, cut: int) -> None:
    """Deferred tokens decoded at once (`extend`, after some appended one by one) give the same text."""
    tok = tokenizer(name)
    ids = tok.encode(output, add_special_tokens=False)
    one_by_one, batched = IncrementalDetokenizer(tok, [1]), IncrementalDetokenizer(tok, [1])
    for token_id in ids[:cut]:
        batched.append(token_id)
    batched.extend(ids[cut:])
    assert batched.output_text == _run(one_by_one, ids)[:len(batched.output_text)]
    batched.flush()
    assert batched.output_text == one_by_one.output_text
