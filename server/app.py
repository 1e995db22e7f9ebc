"""The Starlette app: OpenAI-compatible routes over an `EngineClient`.

Routes: `POST /v1/completions`, `POST /v1/chat/completions`, `GET /v1/models[/{model}]`, `GET /health`,
`GET /metrics`. Every failure is an OpenAI error object with its HTTP status. A client that disconnects
(streaming or not) has its engine requests aborted at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from formwork.core.outputs import RequestOutput
from formwork.core.sampling_params import SamplingParams
from formwork.server.auth import BearerAuthMiddleware
from formwork.server.engine_client import EngineClient, merge_streams
from formwork.server.errors import (APIError, ContextLengthError, EngineUnavailableError, InternalError,
                                    InvalidJSONBodyError, InvalidRequestError, MethodNotAllowedError,
                                    ModelNotFoundError, PayloadTooLargeError, RouteNotFoundError)
from formwork.server.metrics import CONTENT_TYPE, metrics_registry, render
from formwork.server.protocol import (ChatCompletionRequest, CompletionRequest, GenerationRequest,
                                      parse_chat_request, parse_completion_request)
from formwork.server.reasoning import ReasoningParser
from formwork.server.responses import (TokenBytes, chat_body, chat_choice, completion_body,
                                       completion_choice)
from formwork.server.streaming import EventStreamResponse, chat_chunks, completion_chunks
from formwork.server.tools import ToolFormatError, detect_format
from formwork.server.tools.calling import ToolCalling
from formwork.server.tools.request import text_rule
from formwork.server.warnings_header import with_warnings

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_SCHEMA_BYTES = 256 * 1024


@dataclass
class ServerConfig:
    """What the HTTP layer needs besides the engine."""

    served_model_name: str
    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_schema_bytes: int = DEFAULT_MAX_SCHEMA_BYTES
    model_root: str | None = None
    reasoning_parser: str | None = None  # see `formwork.server.reasoning`


class OpenAIServer:
    """Route handlers bound to one engine and config."""

    def __init__(self, engine: EngineClient, config: ServerConfig):
        self.engine = engine
        self.config = config
        self.created = int(time.time())
        self.reasoning = ReasoningParser(config.reasoning_parser) if config.reasoning_parser else None
        self.metrics_registry = self.build_metrics_registry()  # this server's own

    def build_metrics_registry(self) -> CollectorRegistry:
        """The registry `/metrics` renders (a replica router's merges its replicas)."""
        return metrics_registry(self.engine, self.config.served_model_name)

    # ---- plumbing ---------------------------------------------------------------------------------

    async def _json_body(self, request: Request) -> dict[str, Any]:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLargeError(f"the request body is {declared} bytes; the limit is {limit} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLargeError(f"the request body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
        try:
            body = json.loads(b"".join(chunks))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidJSONBodyError(f"the request body is not valid JSON: {exc}") from None
        except RecursionError:
            raise InvalidJSONBodyError("the request body nests too deeply") from None
        if not isinstance(body, dict):
            raise InvalidJSONBodyError("the request body must be a JSON object")
        return body

    def _check_model(self, request: GenerationRequest) -> None:
        if request.model != self.config.served_model_name:
            raise ModelNotFoundError(f"The model `{request.model}` does not exist; this server serves "
                                     f"`{self.config.served_model_name}`", param="model")

    def _check_healthy(self) -> None:
        if not self.engine.is_healthy:
            raise EngineUnavailableError("the engine has stopped; restart the server")

    def _check_context(self, prompt_ids: list[list[int]], max_tokens: int | None, prompt_param: str) -> None:
        limit = self.engine.max_model_len
        for ids in prompt_ids:
            wanted = len(ids) + (max_tokens or 0)
            if len(ids) >= limit or wanted > limit:
                asked = f"{wanted} tokens ({len(ids)} in the prompt, {max_tokens or 0} in the completion)"
                raise ContextLengthError(f"This model's maximum context length is {limit} tokens. However, you "
                                         f"requested {asked}. Please reduce the length of the prompt or "
                                         "max_tokens.", param=prompt_param if len(ids) >= limit else "max_tokens")

    async def _check_constraint(self, http: Request, request: GenerationRequest) -> list[str]:
        """Compile the constraint in a worker thread: a bad one is a 400 before admission; the
        warnings of a good one are logged and returned."""
        if request.constraint is None:
            return []
        warnings = await self._compile_check(http, request.constraint, request.constraint_param)
        for warning in warnings:
            logger.warning("%s: %s", request.constraint_param, warning)
        return warnings

    async def _compile_check(self, http: Request, spec: dict[str, Any], param: str) -> list[str]:
        """`check_constraint` in a worker thread; a client that leaves cancels the compile (its
        budget stops it at the next check) and gets no response (`ClientGone`)."""
        budget = self.engine.constraint_budget()
        work = anyio.to_thread.run_sync(self.engine.check_constraint, spec, param, budget)
        checked = await _until_disconnect(http, work, on_disconnect=budget.cancel)
        if checked is None:
            raise ClientGone()
        return checked

    # ---- generation -------------------------------------------------------------------------------

    async def _generate(self, http: Request, request: GenerationRequest, prefix: str, prompts: list[list[int]],
                        texts: list[str | None], params: SamplingParams,
                        renderer: CompletionRenderer | ChatRenderer) -> Response:
        """Admit one engine request per prompt, then stream or collect the results."""
        response_id = f"{prefix}-{request.request_id or uuid.uuid4().hex}"
        ids = [f"{response_id}-{i}" for i in range(len(prompts))]
        streams = []
        try:
            for request_id, token_ids, text in zip(ids, prompts, texts):
                streams.append(self.engine.generate(request_id, token_ids, params, prompt=text,
                                                    priority=request.priority))
        except BaseException:
            self.engine.abort(ids)
            raise
        created = int(time.time())
        if request.stream:
            chunks = renderer.chunks(merge_streams(streams), response_id, created)
            return EventStreamResponse(chunks, on_close=lambda: self.engine.abort(ids))
        try:
            finals = await _until_disconnect(http, asyncio.gather(*(_last(s) for s in streams)))
        finally:
            self.engine.abort(ids)
        if finals is None:  # the client left; nobody reads this response
            return Response(status_code=499)
        return JSONResponse(renderer.body(finals, response_id, created))

    async def completions(self, http: Request) -> Response:
        request = parse_completion_request(await self._json_body(http), self.config.max_schema_bytes)
        self._check_model(request)
        self._check_healthy()
        params = request.sampling_params(request.max_tokens, request.logprobs)
        prompts = [self.engine.tokenize(p) if isinstance(p, str) else list(p) for p in request.prompts]
        self._check_context(prompts, request.max_tokens, "prompt")
        warnings = await self._check_constraint(http, request)
        texts = [p if isinstance(p, str) else None for p in request.prompts]
        echo = [t if t is not None else self.engine.decode(ids) for t, ids in zip(texts, prompts)] \
            if request.echo else None
        return with_warnings(await self._generate(
            http, request, "cmpl", prompts, texts, params,
            CompletionRenderer(request, self.config.served_model_name, echo)), warnings)

    async def chat_completions(self, http: Request) -> Response:
        request = parse_chat_request(await self._json_body(http), self.config.max_schema_bytes)
        self._check_model(request)
        self._check_healthy()
        tool_calling = await self._tool_calling(http, request)
        if self.reasoning is not None:  # free thinking first; the constraint holds after it
            request.sampling["reasoning"] = True
        params = request.sampling_params(request.max_tokens, request.num_logprobs)
        tools = [t.to_template() for t in request.tools.tools] if request.tools is not None else None
        text, ids = self.engine.render_chat(request.messages, tools=tools)
        self._check_context([ids], request.max_tokens, "messages")
        warnings = await self._check_constraint(http, request)
        return with_warnings(await self._generate(
            http, request, "chatcmpl", [ids], [text], params,
            ChatRenderer(request, self.config.served_model_name, self.engine.token_bytes, tool_calling,
                         self.reasoning)), warnings)

    async def _tool_calling(self, http: Request, request: ChatCompletionRequest) -> ToolCalling | None:
        """Check the offered tools against the model's chat template; where calls are allowed, constrain
        the reply to calls in the template's format (each arguments schema is compiled first, so one
        that cannot be enforced is a 400 naming it) and say how to read them back."""
        tools = request.tools
        if tools is None:
            return None
        try:
            fmt = detect_format(self.engine.files.chat_template)
        except ToolFormatError as exc:
            raise InvalidRequestError(str(exc), param="tools", code="unsupported_tools") from None
        if not tools.calls_allowed:
            return None
        for i, tool in enumerate(tools.tools):
            await self._compile_check(http, {"json": tool.parameters}, f"tools.{i}.function.parameters")
        text, param = None, "tools"
        if request.constraint is not None and tools.choice == "auto":  # a reply without calls keeps it
            await self._compile_check(http, request.constraint, request.constraint_param)
            text, param = text_rule(request.constraint, request.constraint_param), request.constraint_param
        request.constraint, request.constraint_param = tools.constraint(fmt, text), param
        if fmt.trigger in self.engine.tokenizer.all_special_tokens:  # keep the call markers in the text
            request.sampling["skip_special_tokens"] = False
        return ToolCalling(fmt, tuple(t.name for t in tools.callable))

    # ---- other routes -----------------------------------------------------------------------------

    def _model_card(self) -> dict[str, Any]:
        return {"id": self.config.served_model_name, "object": "model", "created": self.created,
                "owned_by": "formwork", "root": self.config.model_root or self.config.served_model_name,
                "parent": None, "max_model_len": self.engine.max_model_len}

    async def list_models(self, http: Request) -> Response:
        return JSONResponse({"object": "list", "data": [self._model_card()]})

    async def retrieve_model(self, http: Request) -> Response:
        name = http.path_params["model"]
        if name != self.config.served_model_name:
            raise ModelNotFoundError(f"The model `{name}` does not exist", param="model")
        return JSONResponse(self._model_card())

    async def health(self, http: Request) -> Response:
        """200 with the compile queue (queued, running, oldest running age); 503 once the engine
        has stopped or no compile can make progress."""
        self._check_healthy()
        compiles = self.engine.structured_output.compile_status()
        if not compiles["healthy"]:
            raise EngineUnavailableError(f"{compiles['stuck']} grammar compiles are stuck past their "
                                         "budgets; no constraint can be compiled", code="compiles_stuck")
        return JSONResponse({"status": "ok", "compile_queue": compiles})

    async def metrics(self, http: Request) -> Response:
        return Response(render(self.metrics_registry), media_type=CONTENT_TYPE)


class CompletionRenderer:
    """`/v1/completions` output: SSE chunks or a `text_completion` body."""

    def __init__(self, request: CompletionRequest, model: str, echo: list[str] | None):
        self.request, self.model, self.echo = request, model, echo

    def chunks(self, updates: AsyncIterator[tuple[int, RequestOutput]], response_id: str,
               created: int) -> AsyncIterator[str]:
        r = self.request
        return completion_chunks(updates, response_id=response_id, created=created, model=self.model, n=r.n,
                                 logprobs=r.logprobs, include_usage=r.include_usage, echo_prompts=self.echo)

    def body(self, finals: list[RequestOutput], response_id: str, created: int) -> dict[str, Any]:
        r = self.request
        choices = [completion_choice(p * r.n + c.index, c, prefix=self.echo[p] if self.echo else "",
                                     logprobs=r.logprobs)
                   for p, output in enumerate(finals) for c in output.outputs]
        return completion_body(response_id, created, self.model, choices, finals)


class ChatRenderer:
    """`/v1/chat/completions` output: SSE chunks or a `chat.completion` body."""

    def __init__(self, request: ChatCompletionRequest, model: str, token_bytes: TokenBytes,
                 tool_calling: ToolCalling | None = None, reasoning: ReasoningParser | None = None):
        self.request, self.model, self.token_bytes = request, model, token_bytes
        self.tool_calling = tool_calling
        self.reasoning = reasoning

    def chunks(self, updates: AsyncIterator[tuple[int, RequestOutput]], response_id: str,
               created: int) -> AsyncIterator[str]:
        r = self.request
        return chat_chunks(updates, response_id=response_id, created=created, model=self.model, n=r.n,
                           top_logprobs=r.num_logprobs, include_usage=r.include_usage, token_bytes=self.token_bytes,
                           tool_calling=self.tool_calling, reasoning=self.reasoning)

    def body(self, finals: list[RequestOutput], response_id: str, created: int) -> dict[str, Any]:
        choices = [chat_choice(c, top_logprobs=self.request.num_logprobs, token_bytes=self.token_bytes,
                               tool_calling=self.tool_calling, reasoning=self.reasoning) for c in finals[0].outputs]
        return chat_body(response_id, created, self.model, choices, finals)


async def _last(stream: AsyncIterator[RequestOutput]) -> RequestOutput | None:
    final = None
    async for output in stream:
        final = output
    return final


async def _wait_disconnect(http: Request) -> None:
    while (await http.receive())["type"] != "http.disconnect":
        pass


class ClientGone(Exception):
    """The client disconnected before its request was admitted; nobody reads a response."""


async def _until_disconnect(http: Request, work: Awaitable[T],
                            on_disconnect: Callable[[], None] | None = None) -> T | None:
    """`work`'s result, or None (with `on_disconnect` called and `work` cancelled) if the client
    disconnects first."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_wait_disconnect(http))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task.done():
        return task.result()
    logger.info("client disconnected; request cancelled")
    if on_disconnect is not None:
        on_disconnect()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):  # nobody reads its outcome
        await task
    return None


async def _client_gone(http: Request, exc: ClientGone) -> Response:
    return Response(status_code=499)


async def _api_error(http: Request, exc: APIError) -> Response:
    return exc.to_response()


async def _http_error(http: Request, exc: HTTPException) -> Response:
    if exc.status_code == 404:
        return RouteNotFoundError(f"no route for {http.method} {http.url.path}").to_response()
    if exc.status_code == 405:
        return MethodNotAllowedError(f"{http.method} is not allowed on {http.url.path}").to_response()
    return JSONResponse({"error": {"message": str(exc.detail), "type": "invalid_request_error", "param": None,
                                   "code": None}}, status_code=exc.status_code)


async def _unexpected_error(http: Request, exc: Exception) -> Response:
    logger.exception("unhandled error on %s %s", http.method, http.url.path)
    return InternalError(f"internal server error: {type(exc).__name__}: {exc}").to_response()


def build_app(engine: EngineClient, config: ServerConfig, server_type: type[OpenAIServer] = OpenAIServer) -> Starlette:
    """The ASGI app serving `engine` under `config.served_model_name` with `server_type`'s handlers."""
    server = server_type(engine, config)
    routes = [
        Route("/v1/completions", server.completions, methods=["POST"]),
        Route("/v1/chat/completions", server.chat_completions, methods=["POST"]),
        Route("/v1/models", server.list_models, methods=["GET"]),
        Route("/v1/models/{model:path}", server.retrieve_model, methods=["GET"]),
        Route("/health", server.health, methods=["GET"]),
        Route("/metrics", server.metrics, methods=["GET"]),
    ]
    handlers = {APIError: _api_error, ClientGone: _client_gone, HTTPException: _http_error,
                Exception: _unexpected_error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    if config.api_key:
        app.add_middleware(BearerAuthMiddleware, api_key=config.api_key)
    return app
