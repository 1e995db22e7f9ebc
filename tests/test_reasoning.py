"""Reasoning models: free thinking up to `</think>`, then the constraint (`thinking_then`,
`SamplingParams(reasoning=True)` through the engine with the tiny model)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import unpack_mask  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402
from scripted_sampler import run_scripted  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams, SamplingParamsError  # noqa: E402
from formwork.grammar import allocate_token_bitmask  # noqa: E402
from formwork.grammar.json_schema import lower_json_schema  # noqa: E402
from formwork.grammar.tags import Lowered, compile_lowered, thinking_then  # noqa: E402

PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "ok": {"type": "boolean"}},
          "required": ["name", "ok"], "additionalProperties": False}
STOP = 256


def _grammar():
    lowered = lower_json_schema(PERSON)
    return compile_lowered(("test reasoning", json.dumps(PERSON)), lambda: Lowered(thinking_then(lowered.node)),
                           byte_vocab())


def _allowed(matcher):
    bitmask = allocate_token_bitmask(1, 257)
    matcher.fill_next_token_bitmask(bitmask, 0)
    return unpack_mask(bitmask[0], 257)


@settings(max_examples=25, deadline=None)
@given(thinking=st.binary(max_size=40).filter(lambda b: b"</think>" not in b), opened=st.booleans())
def test_thinking_is_free_and_cannot_end_the_output(thinking, opened):
    matcher = _grammar().matcher()
    text = (b"<think>" if opened else b"") + thinking
    assert matcher.accept_string(text)
    allowed = _allowed(matcher)
    assert not allowed[STOP], "the output may not end while thinking"
    assert allowed[:256].all(), "one byte cannot both finish `</think>` and go past it"
    assert matcher.accept_string(b"</think>\n\n")
    assert not _allowed(matcher)[ord("x")] and not matcher.can_terminate()
    assert matcher.accept_string('{"name": "Al", "ok": true}')
    allowed = _allowed(matcher)
    assert allowed[STOP] and allowed.sum() == 1, "nothing but the end after the answer"


def test_thinking_masks_only_what_would_close_it_wrongly():
    matcher = _grammar().matcher()
    assert _allowed(matcher)[:256].all()
    assert matcher.accept_string("<think>Let me see</think")
    allowed = _allowed(matcher)
    assert allowed[ord(">")] and allowed[ord("x")], "an unfinished end tag is still free text"
    assert matcher.accept_string(">")
    assert not _allowed(matcher)[ord("x")]


def test_nothing_after_the_answer_and_no_answer_outside_the_schema():
    matcher = _grammar().matcher()
    assert matcher.accept_string("ok</think>")
    assert not matcher.accept_string('{"name": "Al", "ok": 1}')
    assert matcher.accept_string('{"name": "Al", "ok": false}')
    assert not matcher.accept_string(" ")


def test_reasoning_is_a_bool():
    with pytest.raises(SamplingParamsError, match="reasoning"):
        SamplingParams(reasoning="yes")


# ---- engine ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def engine():
    return LLMEngine(tiny_model_dir("llama"), block_size=8, max_num_seqs=8)


def test_engine_thinks_then_answers_in_the_schema(engine):
    scripts = {"opened": "<think>The user asks who. Maybe Bob.</think>",
               "in prompt": "hmm, the quick brown fox</think>",
               "never closed": "I wonder"}
    requests = {name: SamplingParams(structured_outputs={"json": PERSON}, reasoning=True, temperature=1.0, seed=i,
                                     max_tokens=120 if name != "never closed" else 12)
                for i, name in enumerate(scripts)}
    done = run_scripted(engine, "Question: who? Answer:", requests, scripts)
    for name in ("opened", "in prompt"):
        out = done[name].outputs[0]
        thinking, end, answer = out.text.partition("</think>")
        assert end and thinking.endswith(scripts[name].removesuffix("</think>")), out.text
        assert out.finish_reason == "stop", out.text
        jsonschema.validate(json.loads(answer), PERSON)
    never = done["never closed"].outputs[0]
    assert never.finish_reason == "length" and "</think>" not in never.text


def test_engine_reasoning_with_a_choice_and_without_a_constraint(engine):
    scripts = {"choice": "I think yes.</think>", "free": "no constraint here"}
    requests = {"choice": SamplingParams(structured_outputs={"choice": ["yes", "no"]}, reasoning=True,
                                         temperature=0.0, max_tokens=40),
                "free": SamplingParams(reasoning=True, temperature=0.0, max_tokens=6)}
    done = run_scripted(engine, "Question: who? Answer:", requests, scripts)
    choice = done["choice"].outputs[0]
    assert choice.text.partition("</think>")[2].strip() in ("yes", "no") and choice.finish_reason == "stop"
    assert len(done["free"].outputs[0].token_ids) == 6  # nothing to constrain: the model runs free
