"""Structured outputs inside the engine: compile gating and failures, end conditions, jump-forward,
preemption, the overlapped mask fill, the async stream and the request API."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path

import jsonschema
import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.async_engine import AsyncLLMEngine  # noqa: E402
from formwork.core.config import ConfigError, EngineConfig  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.events import EventKind  # noqa: E402
from formwork.core.llm import LLM, response_format_constraint  # noqa: E402
from formwork.core.sampling_params import SamplingParams, SamplingParamsError  # noqa: E402
from formwork.core.sequence import SequenceStatus  # noqa: E402

CONST = {"const": "a fixed value that the grammar spells out"}
PERSON = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6},
                                           "admin": {"type": "boolean"}},
          "required": ["name", "admin"], "additionalProperties": False}


@pytest.fixture(scope="module")
def engine():
    return LLMEngine(tiny_model_dir("llama"), block_size=8, max_num_seqs=8)


def _params(spec=None, **kw) -> SamplingParams:
    kw.setdefault("temperature", 0.0)
    kw.setdefault("max_tokens", 24)
    return SamplingParams(structured_outputs=spec, **kw)


def _run(engine: LLMEngine, requests: dict) -> dict:
    for request_id, params in requests.items():
        engine.add_request(request_id, "Answer:", params)
    done, steps = {}, 0
    while engine.has_unfinished_requests():
        outputs = engine.step()
        steps += bool(outputs)  # steps that ran a request (not those spent waiting for a compile)
        for output in outputs:
            if output.finished:
                done[output.request_id] = output
    done["_steps"] = steps
    return done


def _text(engine: LLMEngine, output) -> str:
    return engine.structured_output.backend.vocab.decode(output.outputs[0].token_ids).decode("utf-8")


# ---- compiling ------------------------------------------------------------------------------------

def test_compile_error_fails_that_request_alone(engine):
    done = _run(engine, {"bad": _params({"regex": "(ab"}), "good": _params({"choice": ["yes", "no"]}),
                         "free": _params(None, max_tokens=5)})
    bad = done["bad"]
    assert bad.finished and bad.outputs[0].finish_reason == "error"
    assert "RegexSyntaxError" in bad.error and "cannot be compiled" in bad.error
    assert done["good"].error is None and _text(engine, done["good"]) in ("yes", "no")
    assert len(done["free"].outputs[0].token_ids) == 5
    assert engine.block_manager.num_used_blocks == 0


def test_compile_budget_overrun_fails_the_request():
    eng = LLMEngine(tiny_model_dir("llama"), block_size=8, grammar_compile_budget_s=1e-9)
    schema = {"type": "object", "properties": {"k": {"type": "string", "pattern": "^[a-z]{3,9}q[0-9]{2,5}$"}}}
    done = _run(eng, {"slow": _params({"json": schema}),
                      "free": _params(None, max_tokens=3)})
    assert done["slow"].outputs[0].finish_reason == "error"
    assert "GrammarBudgetError" in done["slow"].error
    assert done["free"].error is None


def test_mask_step_budget_overrun_fails_the_request_alone():
    eng = LLMEngine(tiny_model_dir("llama"), block_size=8, grammar_step_budget_s=1e-9)
    done = _run(eng, {"slow": _params({"regex": r"zq[0-9]{2}(zq|qz)"}), "free": _params(None, max_tokens=3)})
    assert done["slow"].outputs[0].finish_reason == "error"
    assert "GrammarBudgetError" in done["slow"].error and "token mask" in done["slow"].error
    assert done["free"].error is None and len(done["free"].outputs[0].token_ids) == 3
    assert eng.block_manager.num_used_blocks == 0


def test_waiting_for_grammar_does_not_block_other_requests(engine):
    gate = threading.Event()
    compiles = engine.structured_output._compiles
    compile = compiles.compile
    compiles.compile = lambda spec, budget: (gate.wait(), compile(spec, budget))[1]  # hold the compile
    engine.add_request("held", "Answer:", _params({"regex": "[0-9]{2}"}))
    engine.add_request("free", "Answer:", _params(None, max_tokens=4))
    held = engine.requests["held"].seqs[0]
    for _ in range(6):
        engine.step()
    assert held.status is SequenceStatus.WAITING_FOR_GRAMMAR and held.num_output_tokens == 0
    assert "free" not in engine.requests  # finished while the other one waited
    gate.set()
    compiles.compile = compile
    done = _run(engine, {})
    assert done["_steps"] >= 1
    assert held.status is SequenceStatus.FINISHED_STOPPED
    assert len(held.output_token_ids) >= 1


NESTED_LISTS = r"""
start: list
list: "[" item ("," item)* "]"
item: NUMBER | list
NUMBER: /[0-9]{1,3}/
"""


@pytest.mark.parametrize("jump", [True, False])
def test_ebnf_grammar_outputs_parse_with_lark(jump):
    import lark

    eng = LLMEngine(tiny_model_dir("llama"), block_size=8, enable_jump_forward=jump)
    requests = {f"e{i}": _params({"grammar": NESTED_LISTS}, temperature=t, seed=i, max_tokens=30)
                for i, t in enumerate((0.0, 1.0, 1.0))}
    requests["bad"] = _params({"grammar": "start: undefined_rule"})
    done = _run(eng, requests)
    assert "EbnfSyntaxError" in done["bad"].error and "undefined_rule" in done["bad"].error
    parser = lark.Lark(NESTED_LISTS, start="start")
    grammar = eng.structured_output.backend.compile({"grammar": NESTED_LISTS}, 60.0)
    for i in range(3):
        out = done[f"e{i}"].outputs[0]
        if out.finish_reason == "stop":
            parser.parse(_text(eng, done[f"e{i}"]))
        else:
            assert out.finish_reason == "length"
            assert grammar.matcher().accept_string(_text(eng, done[f"e{i}"]))


# ---- end conditions -------------------------------------------------------------------------------

def test_complete_documents_stop_and_cut_ones_say_length(engine):
    done = _run(engine, {
        "digits": _params({"regex": r"\d{3}"}),
        "cut": _params({"json": {"type": "string", "minLength": 30}}, max_tokens=4),
        "person": _params({"json": PERSON}, max_tokens=40),
        "ignore_eos": _params({"choice": ["left", "right"]}, ignore_eos=True),
        "min_tokens": _params({"choice": ["up", "down"]}, min_tokens=12),
    })
    assert done["digits"].outputs[0].finish_reason == "stop"
    assert len(_text(engine, done["digits"])) == 3 and _text(engine, done["digits"]).isdigit()
    cut = done["cut"].outputs[0]
    assert cut.finish_reason == "length" and len(cut.token_ids) == 4
    person = done["person"].outputs[0]
    if person.finish_reason == "stop":
        jsonschema.validate(json.loads(_text(engine, done["person"])), PERSON)
    # a finished document ends the request even when EOS is ignored or min_tokens is not reached
    assert done["ignore_eos"].outputs[0].finish_reason == "stop"
    assert _text(engine, done["ignore_eos"]) in ("left", "right")
    assert done["min_tokens"].outputs[0].finish_reason == "stop"


@pytest.mark.parametrize("jump", [True, False])
def test_stop_strings_still_cut_constrained_text(jump):
    eng = LLMEngine(tiny_model_dir("llama"), block_size=8, enable_jump_forward=jump)
    done = _run(eng, {"s": _params({"regex": "hello world, fine day"}, stop=["o w"], max_tokens=40)})
    out = done["s"].outputs[0]
    assert (out.text, out.finish_reason, out.stop_reason) == ("hell", "stop", "o w")


def test_extra_stop_token_allowed_only_where_the_grammar_ends(engine):
    vocab_size = engine.vocab_size
    stop_id = engine.tokenizer.convert_tokens_to_ids("a")
    engine.add_request("s", "x", _params({"regex": "(ab)+"}, stop_token_ids=[stop_id]))
    while engine.structured_output.has_pending:
        engine.structured_output.wait_for_grammars(1.0)
        engine._release_grammars()
    seq = engine.requests["s"].seqs[0]
    manager = engine.structured_output
    matcher = seq.matcher

    def allowed(token_id: int) -> bool:
        batch = manager.fill_bitmask([seq])
        words = batch.bitmask[0].numpy().view("uint32")
        return bool((int(words[token_id // 32]) >> (token_id % 32)) & 1)

    assert stop_id < vocab_size and not allowed(stop_id)  # "a" is text here but a stop token for this request
    assert matcher.accept_string("ab")
    assert allowed(stop_id)  # the grammar may end: the stop token is allowed
    engine.abort_request("s")


# ---- jump-forward ---------------------------------------------------------------------------------

def test_jump_forward_appends_forced_tokens_without_sampling():
    outs = {}
    for jump in (True, False):
        eng = LLMEngine(tiny_model_dir("llama"), block_size=8, enable_jump_forward=jump)
        done = _run(eng, {"c": _params({"json": CONST}, max_tokens=64)})
        outs[jump] = (done["_steps"], eng.structured_output.stats)
        assert json.loads(_text(eng, done["c"])) == CONST["const"]
        assert done["c"].outputs[0].finish_reason == "stop"
    (on_steps, on_stats), (off_steps, off_stats) = outs[True], outs[False]
    assert on_stats.num_jump_forward_tokens > 0 and off_stats.num_jump_forward_tokens == 0
    assert on_steps < off_steps / 2  # the forced string costs a few steps, not one per token


def test_jump_forward_respects_max_tokens_and_is_off_with_logprobs(engine):
    done = _run(engine, {"cut": _params({"json": CONST}, max_tokens=3),
                         "lp": _params({"json": CONST}, max_tokens=64, logprobs=0)})
    cut = done["cut"].outputs[0]
    assert cut.finish_reason == "length" and len(cut.token_ids) == 3
    assert json.dumps(CONST["const"]).startswith(_text(engine, done["cut"]))
    lp = done["lp"].outputs[0]
    assert lp.finish_reason == "stop" and len(lp.logprobs) == len(lp.token_ids)


# ---- preemption, overlap, n > 1 -------------------------------------------------------------------

def test_preempted_constrained_requests_resume_with_the_same_output():
    schema = {"type": "object", "properties": {"note": {"type": "string"}, "n": {"type": "integer"}},
              "required": ["note", "n"]}
    requests = {f"r{i}": _params({"json": schema}, max_tokens=30, temperature=1.0, seed=i) for i in range(6)}
    roomy = LLMEngine(tiny_model_dir("llama"), block_size=4)
    tight = LLMEngine(tiny_model_dir("llama"), block_size=4, num_gpu_blocks=14, enable_prefix_caching=False)
    a, b = _run(roomy, dict(requests)), _run(tight, dict(requests))
    assert tight.metrics.num_preemptions > 0 and roomy.metrics.num_preemptions == 0
    for request_id in requests:
        assert a[request_id].outputs[0].token_ids == b[request_id].outputs[0].token_ids
        grammar = tight.structured_output.backend.compile({"json": schema}, 60.0)
        text = tight.structured_output.backend.vocab.decode(b[request_id].outputs[0].token_ids)
        assert grammar.matcher().accept_string(text)


def test_overlapped_mask_fill_gives_the_same_outputs():
    requests = {"j": _params({"json": PERSON}, max_tokens=20, temperature=1.0, seed=3),
                "r": _params({"regex": r"[a-z]{2,8}\.(com|org)"}, temperature=1.0, seed=4),
                "n2": _params({"choice": ["one", "two", "three"]}, n=2, temperature=1.0, seed=5),
                "free": _params(None, max_tokens=8, temperature=1.0, seed=6)}
    inline = _run(LLMEngine(tiny_model_dir("llama"), block_size=8), dict(requests))
    threaded_engine = LLMEngine(tiny_model_dir("llama"), block_size=8, overlap_mask_fill=True)
    threaded = _run(threaded_engine, dict(requests))
    assert threaded_engine.structured_output._fill_executor is not None
    for request_id in requests:
        assert [c.token_ids for c in inline[request_id].outputs] == \
               [c.token_ids for c in threaded[request_id].outputs]
    assert {_text(threaded_engine, threaded["n2"])} <= {"one", "two", "three"}
    assert all(c.finish_reason == "stop" for c in threaded["n2"].outputs)


def test_inline_mask_fill_waits_for_the_call(monkeypatch):
    """Without the thread, start_fill defers the fill to its result's call, which the engine makes after
    launching the forward (so on a GPU the fill overlaps the forward)."""
    eng = LLMEngine(tiny_model_dir("llama"), block_size=8)
    order = []
    fill, forward = eng.structured_output.fill_bitmask, eng.runner.forward
    monkeypatch.setattr(eng.structured_output, "fill_bitmask", lambda seqs: order.append("fill") or fill(seqs))
    monkeypatch.setattr(eng.runner, "forward", lambda batch: order.append("forward") or forward(batch))
    out = _run(eng, {"r": _params({"regex": r"[a-z]{2,8}\.(com|org)"}, temperature=1.0, seed=4)})
    assert out["r"].outputs[0].finish_reason == "stop"
    assert order[:2] == ["forward", "fill"] and order.count("fill") == order.count("forward")


def test_unconstrained_batches_never_touch_masks():
    eng = LLMEngine(tiny_model_dir("llama"), block_size=8)
    _run(eng, {"a": _params(None, max_tokens=4), "b": _params(None, max_tokens=4, temperature=1.0)})
    assert eng.structured_output.stats.num_mask_steps == 0
    assert eng.structured_output._backend is None  # no vocabulary was even built


# ---- async stream ---------------------------------------------------------------------------------

def test_async_stream_reports_a_failed_grammar_and_streams_a_good_one():
    engine = AsyncLLMEngine(tiny_model_dir("llama"), block_size=8)

    async def main():
        bad = engine.add_request("bad", "Answer:", _params({"regex": "[z-a]"}))
        good = engine.add_request("good", "Answer:", _params({"choice": ["cat", "dog"]}))
        return [e async for e in bad], [e async for e in good]

    try:
        bad_events, good_events = asyncio.run(main())
    finally:
        engine.shutdown()
    assert bad_events[-1].kind is EventKind.FAILED and "cannot be compiled" in bad_events[-1].error
    assert good_events[-1].kind is EventKind.FINISHED
    text = "".join(e.text for e in good_events if e.kind is EventKind.DELTA)
    assert text in ("cat", "dog")


# ---- request API ----------------------------------------------------------------------------------

def test_chat_response_format_constrains_the_reply():
    llm = LLM(tiny_model_dir("llama"), block_size=8)
    messages = [{"role": "user", "content": "Who are you?"}]
    rf = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}
    out = llm.chat(messages, SamplingParams(temperature=0, max_tokens=40), response_format=rf, use_tqdm=False)[0]
    text = llm.engine.structured_output.backend.vocab.decode(out.outputs[0].token_ids)
    grammar = llm.engine.structured_output.backend.compile({"json": PERSON}, 60.0)
    assert grammar.matcher().accept_string(text)
    if out.outputs[0].finish_reason == "stop":
        jsonschema.validate(json.loads(text), PERSON)
    obj = llm.chat(messages, SamplingParams(temperature=0, max_tokens=6), response_format={"type": "json_object"},
                   use_tqdm=False)[0]
    assert obj.outputs[0].text.startswith("{")
    with pytest.raises(SamplingParamsError, match="not both"):
        llm.chat(messages, SamplingParams(structured_outputs={"regex": "a"}), response_format=rf)


@pytest.mark.parametrize("response_format, expected", [
    (None, None), ({"type": "text"}, None), ({"type": "json_object"}, {"json_object": True}),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": PERSON}}, {"json": PERSON}),
])
def test_response_format_maps_to_structured_outputs(response_format, expected):
    assert response_format_constraint(response_format) == expected


@pytest.mark.parametrize("bad", [{"type": "xml"}, {"type": "json_schema"}, {"type": "json_schema", "json_schema": {}},
                                 "json", {"json_schema": {"schema": {}}}])
def test_bad_response_format_is_rejected(bad):
    with pytest.raises(SamplingParamsError):
        response_format_constraint(bad)


@pytest.mark.parametrize("spec", [{}, {"json": {}, "regex": "a"}, {"regex": 3}, {"choice": []}, {"choice": ["a", 1]},
                                  {"regex": ""}, {"json_object": "yes"}, {"yaml": "a: 1"}, "json"])
def test_bad_structured_outputs_are_rejected(spec):
    with pytest.raises(SamplingParamsError):
        SamplingParams(structured_outputs=spec)


@pytest.mark.parametrize("option", [{"enable_jump_forward": 1}, {"overlap_mask_fill": "yes"},
                                    {"grammar_compile_budget_s": 0}, {"grammar_step_budget_s": -1.0}])
def test_bad_structured_engine_options_are_rejected(option):
    with pytest.raises(ConfigError):
        EngineConfig(**option)


def test_sampler_masks_only_the_constrained_rows():
    from formwork.core.sampler import Sampler
    from formwork.core.sequence import Request

    vocab_size = 70
    seqs = [Request(f"r{i}", None, [1, 2], SamplingParams(temperature=0.0), arrival_time=0.0).seqs[0]
            for i in range(3)]
    logits = torch.zeros(3, vocab_size)
    logits[:, 9] = 5.0  # the unmasked favourite
    bitmask = torch.full((3, 3), -1, dtype=torch.int32)
    bitmask[1] = 0
    bitmask[1, 66 // 32] = 1 << (66 % 32)  # row 1 may only emit token 66
    bitmask[2] = 0  # all-zero row, but not listed as constrained: left untouched
    out = Sampler(vocab_size, [0])(logits, seqs, bitmask, bitmask_rows=[1])
    assert out.token_ids == [9, 66, 9]
