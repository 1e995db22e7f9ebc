"""AsyncLLMEngine: the engine on a background thread, with per-request async streams for the server.

The thread owns the `LLMEngine`: it applies queued adds and aborts between steps and runs `step()`
while there is work. Requests are validated on the caller's side (so a bad prompt raises at once),
then handed over. Each request's outputs go to an asyncio queue on the caller's event loop; a
`RequestStream` turns them into events (accepted, first token, deltas, usage, finished / cancelled /
failed), and `generate()` yields vLLM-style cumulative `RequestOutput`s.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from formwork.core.config import EngineConfig
from formwork.core.engine import DuplicateRequestError, LLMEngine, RequestError
from formwork.core.events import EventKind, RequestFailedError, StreamEvent, StreamState, events_from_output
from formwork.core.gc_policy import STEP_COLLECTOR
from formwork.core.metrics import now
from formwork.core.outputs import RequestOutput
from formwork.core.sampling_params import RequestOutputKind, SamplingParams

logger = logging.getLogger(__name__)

IDLE_POLL_SECONDS = 0.005  # how often to re-check when requests exist but none can be scheduled


class EngineDeadError(RuntimeError):
    """The engine thread stopped on an error; no request can be served any more."""


class EngineOverloadedError(RuntimeError):
    """The waiting queue is full; retry later."""


@dataclass
class _Add:
    request_id: str
    prompt: str | list[int] | None
    params: SamplingParams
    prompt_token_ids: list[int]
    priority: int
    arrival_time: float
    stream: "RequestStream"


@dataclass
class _Commands:
    adds: list[_Add] = field(default_factory=list)
    aborts: list[str] = field(default_factory=list)
    fails: list[tuple[str, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.adds or self.aborts or self.fails)


class RequestStream:
    """Async iterator of `StreamEvent`s for one request. Closing it early aborts the request."""

    def __init__(self, request_id: str, engine: "AsyncLLMEngine"):
        self.request_id = request_id
        self._engine = engine
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue = asyncio.Queue()
        self._pending: list[StreamEvent] = []
        self._state = StreamState()
        self.finished = False

    # -- producer side (engine thread) --
    def _put(self, item: tuple[str, Any]) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the consumer's event loop is closed: nobody is listening
            pass

    # -- consumer side --
    def __aiter__(self) -> "RequestStream":
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._pending:
            if self.finished:
                raise StopAsyncIteration
            kind, payload = await self._queue.get()
            self._pending.extend(self._to_events(kind, payload))
        event = self._pending.pop(0)
        if event.is_terminal:
            self.finished = True
            self._pending.clear()
        return event

    async def next_output(self) -> RequestOutput | None:
        """The next cumulative output (the final one of a cancelled request included); None once the
        stream has ended. Raises `RequestFailedError` if the request failed."""
        while True:
            try:
                event = await self.__anext__()
            except StopAsyncIteration:
                return None
            if event.kind is EventKind.FAILED:
                raise RequestFailedError(event.error or "request failed")
            if event.output is not None:
                return event.output

    def abort(self) -> None:
        if not self.finished:
            self._engine.abort(self.request_id)

    async def aclose(self) -> None:
        self.abort()
        self.finished = True

    def _to_events(self, kind: str, payload: Any) -> list[StreamEvent]:
        rid = self.request_id
        if kind == "accepted":
            return [StreamEvent(EventKind.ACCEPTED, rid)]
        if kind == "failed":
            return [StreamEvent(EventKind.FAILED, rid, error=payload)]
        if kind == "cancelled":
            return [StreamEvent(EventKind.CANCELLED, rid, output=payload)]
        return events_from_output(payload, self._state)


class AsyncLLMEngine:
    """Runs an `LLMEngine` on a background thread; safe to call from any asyncio event loop."""

    def __init__(self, model: str | Path | None = None, config: EngineConfig | None = None, *,
                 engine: LLMEngine | None = None, **options: Any):
        self.engine = engine if engine is not None else LLMEngine(model, config, **options)
        self.max_waiting_requests = self.engine.config.max_waiting_requests
        self._streams: dict[str, RequestStream] = {}
        self._commands = _Commands()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._error: BaseException | None = None

    # ---- lifecycle ------------------------------------------------------------------------------

    @property
    def is_healthy(self) -> bool:
        return self._error is None and self.engine.is_healthy

    @property
    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start the engine thread (also done by the first request)."""
        with self._cv:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="formwork-engine", daemon=True)
                self._thread.start()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the thread; open streams end as cancelled."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        for stream in list(self._streams.values()):
            stream._put(("cancelled", None))
        self._streams.clear()

    # ---- requests -------------------------------------------------------------------------------

    def add_request(self, request_id: str, prompt: str | list[int] | None = None,
                    params: SamplingParams | None = None, *, prompt_token_ids: list[int] | None = None,
                    priority: int = 0) -> RequestStream:
        """Validate and queue a request; returns its event stream. Must be called on an event loop.
        Raises `RequestError` (bad prompt, duplicate id, DELTA outputs), `EngineOverloadedError` or
        `EngineDeadError`."""
        params = params if params is not None else SamplingParams()
        if params.output_kind is RequestOutputKind.DELTA:
            raise RequestError("output_kind DELTA: the async engine's streams turn cumulative outputs into deltas "
                               "themselves (StreamEvent DELTA); ask for CUMULATIVE or FINAL_ONLY")
        if prompt_token_ids is None:
            if isinstance(prompt, str):
                prompt_token_ids = self.engine.tokenize(prompt)
            else:
                prompt_token_ids = list(prompt) if prompt is not None else []
        self.engine.check_request(prompt_token_ids, params)
        stream = RequestStream(request_id, self)
        with self._cv:
            if self._error is not None:
                raise EngineDeadError(f"the engine has stopped: {self._error}")
            if request_id in self._streams:
                raise DuplicateRequestError(f"request_id {request_id!r} is already in use")
            if self.max_waiting_requests is not None and self.num_waiting >= self.max_waiting_requests:
                raise EngineOverloadedError(
                    f"{self.num_waiting} requests are waiting (limit {self.max_waiting_requests}); retry later")
            self._streams[request_id] = stream
            self._commands.adds.append(_Add(request_id, prompt, params, prompt_token_ids, priority, now(), stream))
            self._cv.notify_all()
        self.start()
        return stream

    def generate(self, request_id: str, prompt: str | list[int] | None = None,
                 params: SamplingParams | None = None, *, prompt_token_ids: list[int] | None = None,
                 priority: int = 0) -> AsyncIterator[RequestOutput]:
        """Queue a request (raising at once if it is refused) and iterate its cumulative outputs.
        The last one has `finished=True`; a failure raises `RequestFailedError`; leaving early aborts."""
        stream = self.add_request(request_id, prompt, params, prompt_token_ids=prompt_token_ids,
                                  priority=priority)
        return _outputs(stream)

    def abort(self, request_id: str | list[str]) -> None:
        """Cancel requests (non-blocking); their KV blocks are freed before the next step."""
        ids = [request_id] if isinstance(request_id, str) else list(request_id)
        with self._cv:
            self._commands.aborts.extend(ids)
            self._cv.notify_all()

    def fail(self, request_id: str, error: str) -> None:
        """End a request with an error (non-blocking); its stream gets a FAILED event."""
        with self._cv:
            self._commands.fails.append((request_id, error))
            self._cv.notify_all()

    @property
    def num_waiting(self) -> int:
        return self.engine.num_waiting_requests + len(self._commands.adds)

    def metrics_snapshot(self) -> dict[str, Any]:
        return self.engine.metrics_snapshot()

    # ---- the engine thread ----------------------------------------------------------------------

    def _run(self) -> None:
        engine = self.engine
        try:
            while True:
                with self._cv:
                    while not (self._stopping or self._commands or engine.has_unfinished_requests()):
                        self._cv.wait()
                    if self._stopping:
                        return
                    commands, self._commands = self._commands, _Commands()
                self._apply(commands)
                if engine.has_unfinished_requests():
                    self._dispatch(engine.step())
                    STEP_COLLECTOR.between_steps(idle=not engine.has_unfinished_requests())
                    if engine.scheduler.num_running == 0:  # nothing runnable (e.g. grammars compiling)
                        with self._cv:
                            self._cv.wait(IDLE_POLL_SECONDS)
        except BaseException as exc:  # the engine is unusable: fail every stream
            logger.exception("engine thread died")
            with self._cv:
                self._error = exc
                streams, self._streams = list(self._streams.values()), {}
            for stream in streams:
                stream._put(("failed", f"engine failure: {type(exc).__name__}: {exc}"))

    def _apply(self, commands: _Commands) -> None:
        engine = self.engine
        for add in commands.adds:
            try:
                engine.add_request(add.request_id, add.prompt, add.params, prompt_token_ids=add.prompt_token_ids,
                                   priority=add.priority, arrival_time=add.arrival_time)
            except ValueError as exc:
                self._end(add.request_id, ("failed", str(exc)))
                continue
            add.stream._put(("accepted", None))
        for request_id in commands.aborts:
            output = engine.abort_request(request_id)
            if request_id in self._streams:
                self._end(request_id, ("cancelled", output))
        for request_id, error in commands.fails:
            output = engine.fail_request(request_id, error)
            if output is not None:
                self._dispatch([output])

    def _dispatch(self, outputs: list[RequestOutput]) -> None:
        for output in outputs:
            stream = self._streams.get(output.request_id)
            if stream is None:
                continue
            if output.finished:
                with self._cv:
                    self._streams.pop(output.request_id, None)
            stream._put(("output", output))

    def _end(self, request_id: str, item: tuple[str, Any]) -> None:
        with self._cv:
            stream = self._streams.pop(request_id, None)
        if stream is not None:
            stream._put(item)


async def _outputs(stream: RequestStream) -> AsyncIterator[RequestOutput]:
    try:
        while (output := await stream.next_output()) is not None:
            yield output
    finally:
        stream.abort()
