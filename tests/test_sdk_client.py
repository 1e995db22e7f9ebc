"""`formwork.Client` / `AsyncClient` protocol handling against a scripted OpenAI server (httpx mock
transport): request bodies, typed results, streaming, truncation and typed errors."""
from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, Callable, Literal

import httpx
import pytest

from formwork import sdk
from formwork.sdk.errors import (APIConnectionError, APITimeoutError, AuthenticationError, BadRequestError,
                                 InternalServerError, NotFoundError, OutputValidationError, RateLimitError,
                                 ServiceUnavailableError, TruncatedOutputError, UnsupportedOutputTypeError)


@dataclasses.dataclass
class Person:
    name: str
    age: int


Reply = Callable[[str, dict[str, Any]], httpx.Response]


class FakeServer:
    """Records requests; `/v1/models` lists one model, POSTs are answered by `reply(path, body)`."""

    def __init__(self, reply: Reply):
        self.reply = reply
        self.requests: list[tuple[str, dict[str, Any], httpx.Headers]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m1", "object": "model"}]})
        body = json.loads(request.content)
        self.requests.append((request.url.path, body, request.headers))
        return self.reply(request.url.path, body)


def completion(text: str, finish_reason: str = "stop", chat: bool = True) -> httpx.Response:
    choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
              if chat else {"index": 0, "text": text, "finish_reason": finish_reason})
    return httpx.Response(200, json={"id": "x", "choices": [choice]})


def sse(*events: Any) -> httpx.Response:
    body = "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)
    return httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})


def chunk(content: str | None, finish_reason: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": content} if content is not None else {},
                         "finish_reason": finish_reason}]}


def client_for(reply: Reply, **options: Any) -> tuple[sdk.Client, FakeServer]:
    server = FakeServer(reply)
    return sdk.Client("http://test", transport=httpx.MockTransport(server), **options), server


MESSAGES = [{"role": "user", "content": "a person"}]


def test_chat_generate_sends_response_format_and_returns_the_type():
    client, server = client_for(lambda path, body: completion('{"name": "Ann", "age": 31}'))
    assert client.generate(MESSAGES, Person, temperature=0) == Person("Ann", 31)
    path, body, _ = server.requests[0]
    assert path == "/v1/chat/completions"
    assert body["model"] == "m1" and body["messages"] == MESSAGES and body["temperature"] == 0
    assert "max_tokens" not in body  # the server's default: the rest of the context
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] == "Person"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["name", "age"]


def test_text_prompt_uses_completions_and_regex_uses_structured_outputs():
    client, server = client_for(lambda path, body: completion("555-1234", chat=False), model="given")
    assert client.generate("Phone:", sdk.Regex(r"\d{3}-\d{4}"), max_tokens=9) == "555-1234"
    path, body, _ = server.requests[0]
    assert path == "/v1/completions" and body["prompt"] == "Phone:" and body["model"] == "given"
    assert body["structured_outputs"] == {"regex": r"\d{3}-\d{4}"} and "response_format" not in body
    assert body["max_tokens"] == 9


def test_no_output_type_returns_text_and_api_key_is_sent():
    client, server = client_for(lambda path, body: completion("hello"), api_key="secret")
    assert client.generate(MESSAGES) == "hello"
    _, body, headers = server.requests[0]
    assert headers["authorization"] == "Bearer secret"
    assert "response_format" not in body and "structured_outputs" not in body


def test_length_finish_raises_truncated_with_partial_text():
    client, _ = client_for(lambda path, body: completion('{"name": "An', finish_reason="length"))
    with pytest.raises(TruncatedOutputError) as info:
        client.generate(MESSAGES, Person, max_tokens=4)
    assert info.value.partial_text == '{"name": "An' and info.value.max_tokens == 4


def test_invalid_output_from_a_server_that_ignores_the_schema():
    client, _ = client_for(lambda path, body: completion('{"name": "Ann", "age": "old"}'))
    with pytest.raises(OutputValidationError) as info:
        client.generate(MESSAGES, Person)
    assert info.value.path == "age" and "old" in info.value.text


def test_unsupported_type_fails_before_any_request():
    client, server = client_for(lambda path, body: completion("{}"))
    with pytest.raises(UnsupportedOutputTypeError):
        client.generate(MESSAGES, list[complex])  # pydantic has no JSON Schema for complex
    with pytest.raises(UnsupportedOutputTypeError):
        client.generate_batch([MESSAGES, MESSAGES], sdk.Regex("(a)\\1"))
    with pytest.raises(TypeError, match="'n'"):
        client.generate(MESSAGES, Person, n=2)
    with pytest.raises(TypeError, match="prompt"):
        client.generate(42, Person)
    assert server.requests == []


@pytest.mark.parametrize("status, body, headers, error", [
    (400, {"error": {"message": "bad", "type": "invalid_request_error", "param": "response_format",
                     "code": "invalid_schema"}}, {}, BadRequestError),
    (401, {"error": {"message": "no key", "type": "authentication_error", "param": None, "code": "x"}}, {},
     AuthenticationError),
    (404, {"error": {"message": "no model", "type": "invalid_request_error", "param": "model",
                     "code": "model_not_found"}}, {}, NotFoundError),
    (429, {"error": {"message": "slow down"}}, {}, RateLimitError),
    (503, {"error": {"message": "busy", "type": "server_error", "code": "server_overloaded"}},
     {"Retry-After": "3"}, ServiceUnavailableError),
    (500, "not json at all", {}, InternalServerError),
])
def test_http_errors_become_typed_exceptions(status, body, headers, error):
    def reply(path, request_body):
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    client, _ = client_for(reply)
    with pytest.raises(error) as info:
        client.generate(MESSAGES, Person)
    assert info.value.status_code == status
    if isinstance(body, dict):
        assert info.value.message == body["error"]["message"]
        assert info.value.code == body["error"].get("code")
    if error is ServiceUnavailableError:
        assert info.value.retry_after == 3.0


def test_transport_failures_become_connection_errors():
    def refuse(request):
        raise httpx.ConnectError("refused", request=request)

    def slow(request):
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(APIConnectionError):
        sdk.Client("http://test", model="m", transport=httpx.MockTransport(refuse)).generate("x", int)
    with pytest.raises(APITimeoutError):
        sdk.Client("http://test", model="m", transport=httpx.MockTransport(slow)).generate("x", int)


def test_stream_yields_partial_text_then_the_value():
    events = [chunk("", None), chunk('{"name": '), chunk('"Bo", "age": 4'), chunk("}"), chunk(None, "stop"), "[DONE]"]
    client, server = client_for(lambda path, body: sse(*events))
    items = list(client.stream(MESSAGES, Person))
    assert items[:-1] == ['{"name": ', '"Bo", "age": 4', "}"]
    assert all(isinstance(piece, sdk.PartialText) for piece in items[:-1])
    assert items[-1] == Person("Bo", 4) and server.requests[0][1]["stream"] is True


def test_stream_of_a_text_completion():
    events = [{"choices": [{"index": 0, "text": "55", "finish_reason": None}]},
              {"choices": [{"index": 0, "text": "5-12", "finish_reason": "stop"}]},
              {"choices": [], "usage": {"total_tokens": 9}}, "[DONE]"]
    client, server = client_for(lambda path, body: sse(*events))
    assert list(client.stream("Phone:", sdk.Regex(r"\d{3}-\d{2}"), max_tokens=8)) == ["55", "5-12", "555-12"]
    assert server.requests[0][0] == "/v1/completions"


def test_stream_truncation_and_error_events():
    client, _ = client_for(lambda path, body: sse(chunk('{"name'), chunk(None, "length"), "[DONE]"))
    with pytest.raises(TruncatedOutputError) as info:
        list(client.stream(MESSAGES, Person))
    assert info.value.partial_text == '{"name'
    error = {"error": {"message": "engine died", "type": "server_error", "param": None, "code": "engine_dead"}}
    client, _ = client_for(lambda path, body: sse(chunk("{"), error, "[DONE]"))
    with pytest.raises(InternalServerError, match="engine died"):
        list(client.stream(MESSAGES, Person))
    client, _ = client_for(lambda path, body: httpx.Response(401, json={"error": {"message": "key"}}))
    with pytest.raises(AuthenticationError):
        list(client.stream(MESSAGES, Person))


def test_generate_batch_keeps_order():
    def reply(path, body):
        n = int(body["messages"][0]["content"])
        return completion(json.dumps({"name": f"p{n}", "age": n}))

    client, server = client_for(reply, max_concurrency=3)
    prompts = [[{"role": "user", "content": str(i)}] for i in range(7)]
    assert client.generate_batch(prompts, Person) == [Person(f"p{i}", i) for i in range(7)]
    assert len(server.requests) == 7


def test_async_client_generate_batch_and_stream():
    def reply(path, body):
        if body.get("stream"):
            return sse(chunk("ye"), chunk("s", "stop"), "[DONE]")
        return completion('"b"')

    async def main():
        server = FakeServer(reply)
        async with sdk.AsyncClient("http://test/v1/", transport=httpx.MockTransport(server)) as client:
            one = await client.generate(MESSAGES, Literal["a", "b"])
            many = await client.generate_batch([MESSAGES] * 3, Literal["a", "b"])
            streamed = [item async for item in client.stream(MESSAGES, sdk.Choice(["yes", "no"]))]
            assert await client.models() == ["m1"]
        return one, many, streamed, server

    one, many, streamed, server = asyncio.run(main())
    assert one == "b" and many == ["b", "b", "b"]
    assert streamed == ["ye", "s", "yes"] and isinstance(streamed[0], sdk.PartialText)
    assert server.requests[-1][1]["structured_outputs"] == {"choice": ["yes", "no"]}
