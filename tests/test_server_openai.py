"""`formwork serve` on a tiny random Llama, driven by the official `openai` client, unchanged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import openai
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import API_KEY, MODEL, tiny_server  # noqa: E402

MESSAGES = [{"role": "user", "content": "Hello world! How are you today?"}]
GREEDY = dict(temperature=0, max_tokens=12, extra_body={"ignore_eos": True})


@pytest.fixture(scope="module")
def server():
    return tiny_server()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=API_KEY, max_retries=0, timeout=60)


def raw_post(server, path: str, body, **headers) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(f"{server.url}{path}", content=content, timeout=60,
                      headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json", **headers})


# ---- happy paths ----------------------------------------------------------------------------------

def test_models_health_and_metrics(server, client):
    models = client.models.list()
    assert [m.id for m in models.data] == [MODEL] and models.data[0].object == "model"
    assert client.models.retrieve(MODEL).id == MODEL
    assert httpx.get(f"{server.url}/health").status_code == 200  # open without a key
    text = httpx.get(f"{server.url}/metrics").text
    for name in ("formwork:num_requests_running", "formwork:num_requests_waiting", "formwork:kv_cache_usage_perc",
                 "formwork:prefix_cache_queries_total", "formwork:prefix_cache_hits_total",
                 "formwork:time_to_first_token_seconds_bucket", "formwork:inter_token_latency_seconds_bucket",
                 "formwork:e2e_request_latency_seconds_count", "formwork:prompt_tokens_total",
                 "formwork:generation_tokens_total", "formwork:num_preemptions_total", "formwork:kv_cache_blocks_used",
                 "formwork:grammar_compile_seconds_bucket", "formwork:constraint_check_seconds_count",
                 "formwork:grammar_mask_step_seconds_sum", "formwork:jump_forward_tokens_total"):
        assert f"{name}{{" in text, name


def test_chat_stream_equals_non_stream(client):
    full = client.chat.completions.create(model=MODEL, messages=MESSAGES, **GREEDY)
    assert full.object == "chat.completion" and full.id.startswith("chatcmpl-")
    choice = full.choices[0]
    assert choice.message.role == "assistant" and choice.finish_reason == "length"
    assert full.usage.completion_tokens == 12 and full.usage.total_tokens == full.usage.prompt_tokens + 12
    chunks = list(client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True,
                                                 stream_options={"include_usage": True}, **GREEDY))
    assert {c.id for c in chunks} == {chunks[0].id} and all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == choice.message.content
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 12
    assert all(c.usage is None for c in chunks[:-1])


def test_completions_stream_equals_non_stream_with_several_prompts(client):
    prompts = ["The quick brown fox", "Numbers: 1 2 3"]
    full = client.completions.create(model=MODEL, prompt=prompts, n=2, **GREEDY)
    assert full.object == "text_completion" and sorted(c.index for c in full.choices) == [0, 1, 2, 3]
    by_index = {c.index: c.text for c in full.choices}
    assert by_index[0] == by_index[1] and by_index[2] == by_index[3]  # greedy: n copies agree
    streamed: dict[int, str] = {}
    for chunk in client.completions.create(model=MODEL, prompt=prompts, n=2, stream=True, **GREEDY):
        for c in chunk.choices:
            streamed[c.index] = streamed.get(c.index, "") + c.text
    assert streamed == by_index
    assert full.usage.completion_tokens == 4 * 12


def test_completion_prompt_as_token_ids_and_echo(client):
    out = client.completions.create(model=MODEL, prompt=[5, 6, 7], echo=True, **GREEDY)
    assert out.usage.prompt_tokens == 3
    echo_free = client.completions.create(model=MODEL, prompt=[5, 6, 7], **GREEDY)
    assert out.choices[0].text.endswith(echo_free.choices[0].text) and len(out.choices[0].text) > len(
        echo_free.choices[0].text)


def test_n_with_seed_is_reproducible_and_varied(client):
    kwargs = dict(model=MODEL, messages=MESSAGES, n=3, temperature=1.0, seed=1234, max_tokens=10,
                  extra_body={"ignore_eos": True})
    first = client.chat.completions.create(**kwargs)
    second = client.chat.completions.create(**kwargs)
    texts = [c.message.content for c in sorted(first.choices, key=lambda c: c.index)]
    assert [c.index for c in first.choices] == [0, 1, 2]
    assert texts == [c.message.content for c in sorted(second.choices, key=lambda c: c.index)]
    assert len(set(texts)) > 1
    assert first.usage.completion_tokens == 30


def test_stop_sequence_trims_the_text(client):
    base = client.completions.create(model=MODEL, prompt="The cat sat on", temperature=0, max_tokens=24,
                                     extra_body={"ignore_eos": True}).choices[0].text
    printable = [i for i in range(2, len(base) - 2) if base[i:i + 2].isascii() and base[i:i + 2].strip()]
    assert printable, f"no usable stop string in {base!r}"
    cut = printable[0]
    stop = base[cut:cut + 2]
    out = client.completions.create(model=MODEL, prompt="The cat sat on", temperature=0, max_tokens=24,
                                    stop=[stop], extra_body={"ignore_eos": True}).choices[0]
    assert out.finish_reason == "stop" and out.text == base[:base.index(stop)]
    assert out.model_extra["stop_reason"] == stop


def test_chat_logprobs(client):
    out = client.chat.completions.create(model=MODEL, messages=MESSAGES, logprobs=True, top_logprobs=3, **GREEDY)
    content = out.choices[0].logprobs.content
    assert len(content) == 12
    for entry in content:
        tops = [t.logprob for t in entry.top_logprobs]
        assert len(tops) == 3 and tops == sorted(tops, reverse=True)
        assert entry.logprob == pytest.approx(tops[0], abs=1e-4)  # greedy picks the most likely token
        assert entry.bytes and entry.logprob <= 0


def test_completion_logprobs(client):
    out = client.completions.create(model=MODEL, prompt="Hello", logprobs=2, **GREEDY).choices[0]
    lp = out.logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 12
    assert lp.text_offset[0] == 0 and lp.text_offset == sorted(lp.text_offset)
    for token_lp, top in zip(lp.token_logprobs, lp.top_logprobs):
        assert 1 <= len(top) <= 2 and token_lp == pytest.approx(max(top.values()), abs=1e-4)


# ---- errors ---------------------------------------------------------------------------------------

def error_body(exc: openai.APIStatusError) -> dict:
    return exc.response.json()["error"]


def test_auth(server):
    bad = openai.OpenAI(base_url=f"{server.url}/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        bad.models.list()
    assert error_body(info.value)["code"] == "invalid_api_key"
    assert httpx.get(f"{server.url}/v1/models").status_code == 401


def test_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    assert error_body(info.value) | {"message": ""} == {"message": "", "type": "invalid_request_error",
                                                         "param": "model", "code": "model_not_found"}
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")


@pytest.mark.parametrize("body, param, code", [
    (b"{not json", None, "invalid_json"),
    (b"[1, 2]", None, "invalid_json"),
    (b'{"a":' * 5_000, None, "invalid_json"),
    ({"model": MODEL, "messages": MESSAGES, "temperature": "hot"}, "temperature", "invalid_type"),
    ({"model": MODEL, "messages": MESSAGES, "n": "two"}, "n", "invalid_type"),
    ({"model": MODEL, "messages": [{"role": "user"}], "stop": {"a": 1}}, "stop", "invalid_type"),
    ({"model": MODEL}, "messages", "missing_required_parameter"),
    ({"model": MODEL, "messages": MESSAGES, "top_logprobs": 2}, "top_logprobs", "invalid_value"),
    ({"model": MODEL, "messages": MESSAGES, "top_p": 3}, "top_p", "invalid_value"),
])
def test_bad_bodies_are_400(server, body, param, code):
    response = raw_post(server, "/v1/chat/completions", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")


def test_context_too_long(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=10_000)
    assert (error_body(info.value)["code"], error_body(info.value)["param"]) == ("context_length_exceeded",
                                                                                 "max_tokens")
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt=[7] * 300, max_tokens=1)
    assert (error_body(info.value)["code"], error_body(info.value)["param"]) == ("context_length_exceeded",
                                                                                 "prompt")
    with pytest.raises(openai.BadRequestError) as info:
        client.completions.create(model=MODEL, prompt=[10**6], max_tokens=1)
    assert "vocabulary" in error_body(info.value)["message"]


@pytest.mark.parametrize("extra, words", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"a": {"type": "integer", "minimum": "zero"}}}}}},
     ["/properties/a/minimum"]),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"tags": {"type": "string", "pattern": "(a)\\1"}}}}}},
     ["pattern", "/properties/tags/pattern"]),
    ({"structured_outputs": {"regex": "(ab"}}, ["(ab"]),
    ({"structured_outputs": {"json": {"$ref": "#/$defs/missing"}}}, ["missing"]),
])
def test_invalid_constraints_name_keyword_and_pointer(client, extra, words):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=4, extra_body=extra)
    error = error_body(info.value)
    assert error["code"] == "invalid_schema" and error["param"] in ("response_format", "structured_outputs")
    for word in words:
        assert word in error["message"], error["message"]


def test_more_than_one_constraint(client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, response_format={"type": "json_object"},
                                       extra_body={"structured_outputs": {"regex": "a+"}})
    assert error_body(info.value)["code"] == "multiple_constraints"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES,
                                       extra_body={"structured_outputs": {"regex": "a+", "choice": ["a"]}})
    assert error_body(info.value)["code"] == "multiple_constraints"


def test_size_limits(server, client):
    big = raw_post(server, "/v1/chat/completions", {"model": MODEL, "messages": [
        {"role": "user", "content": "x" * 70_000}]})
    assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
    schema = {"type": "object", "properties": {f"field_{i}": {"type": "string"} for i in range(400)}}
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, response_format={
            "type": "json_schema", "json_schema": {"name": "big", "schema": schema}})
    assert error_body(info.value)["code"] == "schema_too_large"


def test_unknown_route_and_method(server):
    response = httpx.get(f"{server.url}/v1/nothing", headers={"Authorization": f"Bearer {API_KEY}"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    response = httpx.get(f"{server.url}/v1/chat/completions", headers={"Authorization": f"Bearer {API_KEY}"})
    assert response.status_code == 405


def test_no_unhandled_errors_were_logged(server):
    """Every failure above was answered as a typed API error, none through the catch-all handler."""
    log = server.log()
    assert "unhandled error" not in log and "Traceback" not in log, log[-3000:]
