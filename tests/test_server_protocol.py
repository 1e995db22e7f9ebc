"""Unit tests of the server's request parsing, constraint extraction, chunking and metrics text
(in-process, no engine)."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.core.outputs import CompletionOutput, Logprob, RequestOutput
from formwork.server.errors import (APIError, InvalidConstraintError, InvalidRequestError, InvalidTypeError,
                                    MissingFieldError, UnsupportedFieldError)
from formwork.server.protocol import parse_chat_request, parse_completion_request
from formwork.server.responses import chat_logprobs, completion_logprobs, usage
from formwork.server.streaming import chat_chunks, completion_chunks

LIMIT = 10_000
MSG = [{"role": "user", "content": "hi"}]


def chat(**fields):
    return parse_chat_request({"model": "m", "messages": MSG, **fields}, LIMIT)


def completion(**fields):
    return parse_completion_request({"model": "m", "prompt": "hi", **fields}, LIMIT)


def error_of(fn, *args, **kwargs) -> APIError:
    with pytest.raises(APIError) as info:
        result = fn(*args, **kwargs)
        if hasattr(result, "sampling_params"):
            result.sampling_params(result.max_tokens, None)
    return info.value


# ---- request parsing ------------------------------------------------------------------------------

def test_chat_fields_become_sampling_params():
    request = chat(temperature=0, top_p=0.5, top_k=7, min_p=0.1, n=3, stop="END", seed=5, max_tokens=9,
                   presence_penalty=0.5, frequency_penalty=-0.5, repetition_penalty=1.2,
                   logit_bias={"12": -100}, logprobs=True, top_logprobs=2, user="u", priority=3)
    params = request.sampling_params(request.max_tokens, request.num_logprobs)
    assert (params.temperature, params.top_p, params.top_k, params.min_p, params.n) == (0.0, 0.5, 7, 0.1, 3)
    assert params.stop_strings == ["END"] and params.seed == 5 and params.max_tokens == 9
    assert params.logit_bias == {12: -100.0} and params.logprobs == 2 and params.repetition_penalty == 1.2
    assert request.priority == 3 and request.user == "u"


def test_max_completion_tokens_wins_and_completion_default_is_16():
    assert chat(max_tokens=5, max_completion_tokens=7).max_tokens == 7
    assert chat().max_tokens is None
    assert completion().max_tokens == 16


def test_chat_logprobs_flags():
    assert chat().num_logprobs is None
    assert chat(logprobs=True).num_logprobs == 0
    err = error_of(chat, top_logprobs=2)
    assert isinstance(err, InvalidRequestError) and err.param == "top_logprobs" and "logprobs" in err.message


@pytest.mark.parametrize("fields, param", [
    ({"temperature": "hot"}, "temperature"),
    ({"n": 1.5}, "n"),
    ({"stop": 3}, "stop"),
    ({"stream": "yes"}, "stream"),
    ({"logit_bias": [1]}, "logit_bias"),
    ({"max_tokens": True}, "max_tokens"),
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
])
def test_wrong_types_name_the_field(fields, param):
    err = error_of(chat, **fields)
    assert isinstance(err, InvalidTypeError) and err.status == 400 and err.param == param


@pytest.mark.parametrize("fields, param", [
    ({"temperature": -1}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"n": 0}, "n"),
    ({"n": 129}, "n"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"logit_bias": {"x": 1}}, "logit_bias"),
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
])
def test_bad_values_name_the_field(fields, param):
    err = error_of(chat, **fields)
    assert err.status == 400 and err.param == param


def test_missing_and_unsupported_fields():
    assert isinstance(error_of(parse_chat_request, {"messages": MSG}, LIMIT), MissingFieldError)
    assert error_of(parse_completion_request, {"model": "m"}, LIMIT).param == "prompt"
    assert error_of(chat, tools=[{"type": "function"}]).param == "tools.0.function"
    assert isinstance(error_of(chat, functions=[{"name": "f"}]), UnsupportedFieldError)
    assert isinstance(error_of(completion, suffix="x"), UnsupportedFieldError)
    assert error_of(completion, best_of=3).param == "best_of"
    part = [{"type": "image_url", "image_url": {"url": "x"}}]
    assert error_of(chat, messages=[{"role": "user", "content": part}]).param == "messages.0.content.0.type"


def test_stream_options_need_stream():
    assert error_of(chat, stream_options={"include_usage": True}).param == "stream_options"
    assert chat(stream=True, stream_options={"include_usage": True}).include_usage


def test_prompt_shapes():
    assert completion(prompt="a").prompts == ["a"]
    assert completion(prompt=["a", "b"]).prompts == ["a", "b"]
    assert completion(prompt=[1, 2]).prompts == [[1, 2]]
    assert completion(prompt=[[1], [2, 3]]).prompts == [[1], [2, 3]]
    for bad in ([], [1, "a"], [[]], {"a": 1}):
        assert error_of(completion, prompt=bad).param == "prompt"


def test_content_parts_and_developer_role():
    request = chat(messages=[{"role": "developer", "content": [{"type": "text", "text": "a"},
                                                                 {"type": "text", "text": "b"}]}])
    assert request.messages == [{"role": "system", "content": "ab"}]


# ---- constraints ----------------------------------------------------------------------------------

def test_response_format_variants():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": True}}
    assert chat(response_format=fmt).constraint == {"json": schema}
    assert chat(response_format={"type": "json_object"}).constraint == {"json_object": True}
    assert chat(response_format={"type": "text"}).constraint is None
    assert chat(structured_outputs={"regex": "a+"}).constraint == {"regex": "a+"}
    assert chat(structured_outputs={"json": '{"type": "integer"}'}).constraint == {"json": {"type": "integer"}}
    assert chat(structured_outputs={"choice": ["x", "y"]}).constraint_param == "structured_outputs"


@pytest.mark.parametrize("fields, code", [
    ({"response_format": {"type": "xml"}}, "invalid_value"),
    ({"response_format": {"type": "json_schema"}}, "missing_required_parameter"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 3}}}, "invalid_type"),
    ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "multiple_constraints"),
    ({"structured_outputs": {}}, "missing_required_parameter"),
    ({"structured_outputs": {"regex": "a"}, "response_format": {"type": "json_object"}}, "multiple_constraints"),
    ({"structured_outputs": {"choice": []}}, "invalid_schema"),
    ({"structured_outputs": {"json": "{not json"}}, "invalid_schema"),
    ({"structured_outputs": {"regexp": "a"}}, "invalid_value"),
    ({"structured_outputs": {"json": {"enum": ["x" * 20_000]}}}, "schema_too_large"),
])
def test_bad_constraints(fields, code):
    err = error_of(chat, **fields)
    assert err.status == 400 and err.code == code, err.to_dict()


# ---- responses and chunks -------------------------------------------------------------------------

def _lp(logprob, rank, text):
    return Logprob(logprob, rank, text)


ENTRIES = [{5: _lp(-0.1, 1, "he"), 6: _lp(-2.0, 2, "ha")},
           {7: _lp(-3.0, 3, "llo"), 8: _lp(-0.5, 1, "y"), 9: _lp(-1.0, 2, "!")}]


def test_logprob_shapes():
    lp = chat_logprobs([5, 7], ENTRIES, 2, lambda tid, text: text.encode())
    assert [c["token"] for c in lp["content"]] == ["he", "llo"]
    assert lp["content"][1]["bytes"] == list(b"llo")
    assert [t["token"] for t in lp["content"][1]["top_logprobs"]] == ["y", "!"]  # sampled rank 3 is outside top 2
    lp = completion_logprobs([5, 7], ENTRIES, 1, text_offset=4)
    assert lp["tokens"] == ["he", "llo"] and lp["token_logprobs"] == [-0.1, -3.0]
    assert lp["top_logprobs"] == [{"he": -0.1}, {"y": -0.5}] and lp["text_offset"] == [4, 6]
    inf = completion_logprobs([5], [{5: _lp(float("-inf"), 9, "x")}], 0, 0)
    assert inf["token_logprobs"] == [-9999.0] and json.dumps(inf)


def _snapshots(texts: list[str], final_reason: str, n: int = 1):
    """Cumulative RequestOutputs as the engine yields them, one token per step."""
    out = []
    for step in range(1, len(texts) + 1):
        done = step == len(texts)
        comps = [CompletionOutput(i, "".join(texts[:step]), list(range(step)), None, None,
                                  finish_reason=final_reason if done else None) for i in range(n)]
        out.append(RequestOutput("r", "p", [1, 2, 3], comps, finished=done))
    return out


async def _collect(chunks) -> list:
    return [c async for c in chunks]


async def _source(items):
    for item in items:
        yield 0, item


@settings(deadline=None, max_examples=30)
@given(st.lists(st.text(min_size=0, max_size=4), min_size=1, max_size=8), st.sampled_from(["stop", "length"]),
       st.integers(1, 3), st.booleans())
def test_chat_chunks_reassemble_the_text(pieces, reason, n, include_usage):
    events = asyncio.run(_collect(chat_chunks(
        _source(_snapshots(pieces, reason, n)), response_id="id", created=1, model="m", n=n, top_logprobs=None,
        include_usage=include_usage, token_bytes=lambda t, s: s.encode())))
    assert events[-1] == "data: [DONE]\n\n" and all(e.startswith("data: ") and e.endswith("\n\n") for e in events)
    payloads = [json.loads(e[6:]) for e in events[:-1]]
    assert all(p["object"] == "chat.completion.chunk" and p["id"] == "id" for p in payloads)
    if include_usage:
        assert payloads[-1]["choices"] == [] and payloads[-1]["usage"]["completion_tokens"] == n * len(pieces)
        assert all(p["usage"] is None for p in payloads[:-1])
        payloads = payloads[:-1]
    for index in range(n):
        mine = [p["choices"][0] for p in payloads if p["choices"][0]["index"] == index]
        assert mine[0]["delta"] == {"role": "assistant", "content": ""}
        assert "".join(c["delta"].get("content", "") for c in mine) == "".join(pieces)
        assert [c["finish_reason"] for c in mine][-1] == reason
        assert all(c["finish_reason"] is None for c in mine[:-1])


def test_completion_chunks_echo_and_usage():
    events = asyncio.run(_collect(completion_chunks(
        _source(_snapshots(["a", "b"], "length")), response_id="c", created=1, model="m", n=1, logprobs=None,
        include_usage=True, echo_prompts=["P:"])))
    payloads = [json.loads(e[6:]) for e in events[:-1]]
    assert [p["choices"][0]["text"] for p in payloads[:-1]] == ["P:a", "b"]
    assert payloads[-2]["choices"][0]["finish_reason"] == "length"
    assert payloads[-1]["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                                     "prompt_tokens_details": {"cached_tokens": 0}}


def test_usage_sums_prompts_and_choices():
    outs = [_snapshots(["a", "b"], "stop", n=2)[-1], _snapshots(["c"], "stop")[-1]]
    assert usage(outs)["prompt_tokens"] == 6 and usage(outs)["completion_tokens"] == 5


def test_errors_render_as_openai_objects():
    err = InvalidConstraintError("bad", param="response_format")
    assert err.to_dict() == {"error": {"message": "bad", "type": "invalid_request_error",
                                       "param": "response_format", "code": "invalid_schema"}}
    assert err.to_response().status_code == 400


# ---- robustness -----------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
FIELDS = ["model", "messages", "prompt", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
          "min_p", "n", "stop", "seed", "stream", "stream_options", "logprobs", "top_logprobs", "logit_bias",
          "presence_penalty", "frequency_penalty", "repetition_penalty", "response_format", "structured_outputs",
          "priority", "request_id", "user", "echo", "best_of", "suffix", "tools", "tool_choice", "stop_token_ids",
          "min_tokens", "ignore_eos", "skip_special_tokens"]


@settings(deadline=None, max_examples=200)
@given(st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, max_size=6), st.booleans())
def test_any_json_body_parses_or_raises_an_api_error(fields, chat_endpoint):
    """No body makes parsing fail with anything but a typed 4xx API error."""
    body = {"model": "m", "messages": MSG, "prompt": "hi", **fields}
    try:
        if chat_endpoint:
            request = parse_chat_request(body, LIMIT)
            request.sampling_params(request.max_tokens, request.num_logprobs)
        else:
            request = parse_completion_request(body, LIMIT)
            request.sampling_params(request.max_tokens, request.logprobs)
    except APIError as exc:
        assert 400 <= exc.status < 500 and exc.message
