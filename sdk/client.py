"""HTTP clients for typed outputs: `Client` (sync) and `AsyncClient`, over any OpenAI-compatible server.

    client = formwork.Client("http://127.0.0.1:8000")
    person = client.generate([{"role": "user", "content": "A person"}], output_type=Person, max_tokens=200)

A string prompt goes to `/v1/completions`, a list of chat messages to `/v1/chat/completions`. JSON
output types are sent as OpenAI's `response_format` (`json_schema`, strict); `Regex` and `Choice` as the
`structured_outputs` extension (formwork, vLLM). The output type is checked before the request is sent.
Without `max_tokens` the server's default applies: the rest of the context for chat, but OpenAI's 16
tokens for text completions, so pass `max_tokens` with a string prompt.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from formwork.sdk.errors import (APIConnectionError, APIError, APITimeoutError, OutputValidationError,
                                 error_from_response)
from formwork.sdk.output_types import OutputFormat, PartialText, output_format
from formwork.sdk.tools import StreamedCalls, ToolSet

__all__ = ["AsyncClient", "Client"]

_RESERVED = ("n", "stream", "stream_options", "response_format", "structured_outputs", "model", "prompt",
             "messages")

Prompt = str | list[dict[str, Any]]


@dataclass
class _Call:
    """One request: endpoint, JSON body, and how to read its result."""

    path: str
    body: dict[str, Any]
    fmt: OutputFormat | None
    max_tokens: int | None
    chat: bool
    tools: ToolSet | None = None

    def choice_text(self, choice: dict[str, Any], streaming: bool) -> str:
        if not self.chat:
            return choice.get("text") or ""
        part = choice.get("delta" if streaming else "message") or {}
        return part.get("content") or ""

    def result(self, text: str, finish_reason: str | None) -> Any:
        return text if self.fmt is None else self.fmt.result(text, finish_reason, self.max_tokens)

    def value(self, choice: dict[str, Any]) -> Any:
        """The value of a whole response's choice: typed tool calls when tools were offered."""
        if self.tools is None:
            return self.result(self.choice_text(choice, streaming=False), choice.get("finish_reason"))
        message = choice.get("message") or {}
        raw = [(c.get("id"), c["function"]["name"], c["function"]["arguments"])
               for c in message.get("tool_calls") or []]
        return self.tools.calls(raw, message.get("content"), choice.get("finish_reason"), self.max_tokens)


def _build_call(model: str, prompt: Prompt, output_type: Any, sampling: dict[str, Any], stream: bool,
                tools: ToolSet | None = None) -> _Call:
    reserved = sorted(set(sampling) & set(_RESERVED))
    if reserved:
        raise TypeError(f"generate() does not take {reserved}: the client sets them itself")
    fmt = output_format(output_type) if output_type is not None else None
    body: dict[str, Any] = {"model": model, **sampling}
    chat = _is_messages(prompt)
    body["messages" if chat else "prompt"] = prompt
    if tools is not None:
        if not chat or fmt is not None:
            raise TypeError("tools need a list of chat messages and no output_type")
        body.update(tools.request_fields())
    if fmt is not None:
        response_format = fmt.response_format()
        if response_format is not None:
            body["response_format"] = response_format
        else:
            body["structured_outputs"] = fmt.structured_outputs
    if stream:
        body["stream"] = True
    return _Call("/chat/completions" if chat else "/completions", body, fmt, body.get("max_tokens"), chat, tools)


def _is_messages(prompt: Prompt) -> bool:
    if isinstance(prompt, str):
        return False
    if isinstance(prompt, list) and prompt and all(isinstance(m, dict) for m in prompt):
        return True
    raise TypeError("a prompt is a string or a non-empty list of chat messages ({'role': ..., 'content': ...})")


def _first_choice(payload: Any) -> dict[str, Any]:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise OutputValidationError(f"the server's response has no choices: {str(payload)[:200]}", text="")
    return choices[0]


_DONE = object()


def _sse_payload(line: str) -> Any:
    """The JSON payload of one server-sent-event line, None for other lines, `_DONE` at the end;
    an error event raises its typed `APIError`."""
    if not line.startswith("data:"):
        return None
    data = line[len("data:"):].strip()
    if data == "[DONE]":
        return _DONE
    payload = json.loads(data)
    if isinstance(payload, dict) and "error" in payload:
        raise error_from_response(None, payload)
    return payload


def _base_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


@contextlib.contextmanager
def _transport_errors() -> Iterator[None]:
    try:
        yield
    except httpx.TimeoutException as exc:
        raise APITimeoutError(f"the request timed out: {exc}") from exc
    except httpx.TransportError as exc:
        raise APIConnectionError(f"cannot reach the server: {exc}") from exc


def _error_of(response: httpx.Response) -> APIError:
    try:
        body = response.json()
    except ValueError:
        body = response.text
    return error_from_response(response.status_code, body, response.headers)


def _first_model(payload: Any) -> str:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not data:
        raise APIError("the server lists no models; pass model=... to the client")
    return data[0]["id"]


class _StreamReader:
    """Reads a stream's event lines: `feed(line)` returns what to yield for it (new text as a
    `PartialText`; with tools, each typed `ToolCall` once complete) and sets `done` at `[DONE]`;
    `result()` is the value of the whole reply."""

    def __init__(self, call: _Call):
        self.call = call
        self.text: list[str] = []
        self.calls = StreamedCalls(call.tools) if call.tools is not None else None
        self.finish_reason: str | None = None
        self.done = False

    def feed(self, line: str) -> list[Any]:
        payload = _sse_payload(line)
        if payload is _DONE:
            self.done = True
            return []
        if payload is None or not payload.get("choices"):  # not an event, or e.g. a usage chunk
            return []
        choice = _first_choice(payload)
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        if self.calls is not None:
            return [PartialText(x) if isinstance(x, str) else x for x in self.calls.feed(choice.get("delta") or {})]
        piece = self.call.choice_text(choice, streaming=True)
        self.text.append(piece)
        return [PartialText(piece)] if piece else []

    def result(self) -> Any:
        if self.calls is not None:
            return self.calls.result(self.finish_reason, self.call.max_tokens)
        return self.call.result("".join(self.text), self.finish_reason)


class Client:
    """Synchronous client. `model=None` uses the first model the server lists; `max_concurrency`
    bounds the parallel requests of `generate_batch`; `transport` is an httpx transport (proxies,
    tests)."""

    def __init__(self, base_url: str, api_key: str | None = None, *, model: str | None = None,
                 timeout: float = 120.0, max_concurrency: int = 8,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=_base_url(base_url), headers=_headers(api_key), timeout=timeout,
                                  transport=transport)
        self._model = model
        self.max_concurrency = max_concurrency

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    @property
    def model(self) -> str:
        if self._model is None:
            self._model = _first_model(self._get("/models"))
        return self._model

    def models(self) -> list[str]:
        """The ids of the models the server serves."""
        return [entry["id"] for entry in self._get("/models").get("data", [])]

    def generate(self, prompt: Prompt, output_type: Any = None, *, tools: Sequence[Any] | None = None,
                 tool_choice: Any = "auto", parallel_tool_calls: bool = True, **sampling: Any) -> Any:
        """One completion parsed as `output_type` (the text itself when None); with `tools` (functions or
        pydantic models), the reply's typed `ToolCalls`. Raises `TruncatedOutputError` at the token limit,
        `APIError` subclasses for server errors."""
        if tools is not None:
            tool_set = ToolSet.build(tools, tool_choice, parallel_tool_calls)
            call = _build_call(self.model, prompt, output_type, sampling, stream=False, tools=tool_set)
            return call.value(_first_choice(self._post(call)))
        return self._generate_with(self.model, prompt, output_type, sampling)

    def generate_batch(self, prompts: Sequence[Prompt], output_type: Any = None, **sampling: Any) -> list[Any]:
        """`generate` for each prompt, sent concurrently; results in order (the first failure raises)."""
        if output_type is not None:
            output_format(output_type)  # fail before any request
        model = self.model
        with ThreadPoolExecutor(max_workers=max(1, min(self.max_concurrency, len(prompts)))) as pool:
            futures = [pool.submit(self._generate_with, model, p, output_type, sampling) for p in prompts]
            return [future.result() for future in futures]

    def stream(self, prompt: Prompt, output_type: Any = None, *, tools: Sequence[Any] | None = None,
               tool_choice: Any = "auto", parallel_tool_calls: bool = True, **sampling: Any) -> Iterator[Any]:
        """Yield each new piece of text as a `PartialText`, then the parsed value (or full text); with
        `tools`, each typed `ToolCall` as soon as it is complete, then the reply's `ToolCalls`."""
        tool_set = ToolSet.build(tools, tool_choice, parallel_tool_calls) if tools is not None else None
        call = _build_call(self.model, prompt, output_type, sampling, stream=True, tools=tool_set)
        reader = _StreamReader(call)
        with _transport_errors(), self._http.stream("POST", call.path, json=call.body) as response:
            if response.status_code >= 400:
                response.read()
                raise _error_of(response)
            for line in response.iter_lines():
                items = reader.feed(line)
                if reader.done:
                    break
                yield from items
        yield reader.result()

    def _generate_with(self, model: str, prompt: Prompt, output_type: Any, sampling: dict[str, Any]) -> Any:
        call = _build_call(model, prompt, output_type, sampling, stream=False)
        return call.value(_first_choice(self._post(call)))

    def _post(self, call: _Call) -> Any:
        with _transport_errors():
            response = self._http.post(call.path, json=call.body)
        return self._json(response)

    def _get(self, path: str) -> Any:
        with _transport_errors():
            response = self._http.get(path)
        return self._json(response)

    @staticmethod
    def _json(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise _error_of(response)
        return response.json()


class AsyncClient:
    """Asynchronous client with the same methods as `Client` (coroutines; `stream` is an async
    iterator)."""

    def __init__(self, base_url: str, api_key: str | None = None, *, model: str | None = None,
                 timeout: float = 120.0, max_concurrency: int = 8,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self._http = httpx.AsyncClient(base_url=_base_url(base_url), headers=_headers(api_key), timeout=timeout,
                                  transport=transport)
        self._model = model
        self.max_concurrency = max_concurrency

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def model(self) -> str:
        """The model requests name (the first one the server lists unless given)."""
        if self._model is None:
            self._model = _first_model(await self._get("/models"))
        return self._model

    async def models(self) -> list[str]:
        return [entry["id"] for entry in (await self._get("/models")).get("data", [])]

    async def generate(self, prompt: Prompt, output_type: Any = None, *, tools: Sequence[Any] | None = None,
                       tool_choice: Any = "auto", parallel_tool_calls: bool = True, **sampling: Any) -> Any:
        tool_set = ToolSet.build(tools, tool_choice, parallel_tool_calls) if tools is not None else None
        call = _build_call(await self.model(), prompt, output_type, sampling, stream=False, tools=tool_set)
        return call.value(_first_choice(await self._post(call)))

    async def generate_batch(self, prompts: Sequence[Prompt], output_type: Any = None,
                             **sampling: Any) -> list[Any]:
        if output_type is not None:
            output_format(output_type)  # fail before any request
        await self.model()
        limit = asyncio.Semaphore(max(1, self.max_concurrency))

        async def one(prompt: Prompt) -> Any:
            async with limit:
                return await self.generate(prompt, output_type, **sampling)

        return list(await asyncio.gather(*(one(p) for p in prompts)))

    async def stream(self, prompt: Prompt, output_type: Any = None, *, tools: Sequence[Any] | None = None,
                     tool_choice: Any = "auto", parallel_tool_calls: bool = True,
                     **sampling: Any) -> AsyncIterator[Any]:
        tool_set = ToolSet.build(tools, tool_choice, parallel_tool_calls) if tools is not None else None
        call = _build_call(await self.model(), prompt, output_type, sampling, stream=True, tools=tool_set)
        reader = _StreamReader(call)
        with _transport_errors():
            async with self._http.stream("POST", call.path, json=call.body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error_of(response)
                async for line in response.aiter_lines():
                    items = reader.feed(line)
                    if reader.done:
                        break
                    for item in items:
                        yield item
        yield reader.result()

    async def _post(self, call: _Call) -> Any:
        with _transport_errors():
            response = await self._http.post(call.path, json=call.body)
        return Client._json(response)

    async def _get(self, path: str) -> Any:
        with _transport_errors():
            response = await self._http.get(path)
        return Client._json(response)
