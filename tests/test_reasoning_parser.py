"""`server/reasoning.py`: replies split into reasoning_content and content, whole or streamed."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from formwork.server.reasoning import ReasoningParser

R1, QWEN3 = ReasoningParser("deepseek_r1"), ReasoningParser("qwen3")


@pytest.mark.parametrize("parser, text, expected", [
    (R1, "<think>hmm</think>\n\n{}", ("hmm", "\n\n{}")),
    (R1, "hmm</think>{}", ("hmm", "{}")),
    (R1, "still thinking", ("still thinking", None)),
    (R1, "done</think>", ("done", None)),
    (R1, "", (None, None)),
    (QWEN3, "<think>hmm</think>{}", ("hmm", "{}")),
    (QWEN3, "plain answer", (None, "plain answer")),
    (QWEN3, "<think>cut", ("cut", None)),
    (QWEN3, "<think></think>{}", (None, "{}")),
])
def test_split(parser, text, expected):
    assert parser.split(text) == expected


def test_unknown_parser():
    with pytest.raises(ValueError, match="unknown reasoning parser"):
        ReasoningParser("llama")


TEXTS = st.lists(st.sampled_from(["<think>", "</think>", "<", "</", "think", ">", "a", "{}", "\n", "</thi"]),
                 max_size=10).map("".join)


@settings(max_examples=60, deadline=None)
@given(text=TEXTS, cuts=st.lists(st.integers(0, 60), max_size=6), qwen=st.booleans())
def test_streamed_deltas_add_up_to_the_whole_split(text, cuts, qwen):
    parser = QWEN3 if qwen else R1
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])] or [""]
    stream = parser.stream()
    reasoning = content = ""
    for k, piece in enumerate(pieces):
        r, c = stream.split(0, piece, final=k == len(pieces) - 1)
        reasoning, content = reasoning + r, content + c
    assert (reasoning or None, content or None) == parser.split(text)


def test_stream_holds_back_only_a_possible_tag():
    stream = R1.stream()
    assert stream.split(0, "<thi", final=False) == ("", "")
    assert stream.split(0, "nk>so </", final=False) == ("so ", "")
    assert stream.split(0, "b> x</think", final=False) == ("</b> x", "")
    assert stream.split(0, ">{}", final=False) == ("", "{}")
    assert stream.split(1, "other choice", final=True) == ("other choice", "")
