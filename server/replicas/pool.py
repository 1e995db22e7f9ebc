"""The router's side of data parallelism: N engine replicas behind one `PromptTools`.

`ReplicaPool` is what `OpenAIServer` calls instead of an `EngineClient`: it tokenizes and checks
constraints itself, routes each prompt with a `PrefixRouter`, streams the replica's outputs back
through its Serve handle, and cancels the call when the client leaves. A monitor task probes every
replica: a replica whose probe fails is taken out of rotation and its in-flight requests end with
`ReplicaLostError` (HTTP 503) instead of hanging; once Serve has replaced it and the probe passes it
is routed to again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from formwork.core.grammar_backend import get_backend
from formwork.core.metrics import Histogram
from formwork.core.model_files import ModelFiles
from formwork.core.outputs import RequestOutput
from formwork.core.sampling_params import SamplingParams
from formwork.server.engine_client import PromptTools
from formwork.server.errors import APIError, EngineUnavailableError, InternalError
from formwork.server.replicas.routing import NoReplicaError, PrefixRouter

logger = logging.getLogger(__name__)

PROBE_INTERVAL_S = 1.0
PROBE_TIMEOUT_S = 10.0
#: Routing decisions take microseconds; the buckets reach 10 ms to show any outlier.
ROUTER_BUCKETS = (1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2)


class ReplicaLostError(EngineUnavailableError):
    """The replica serving a request died; the request is lost and may be retried (HTTP 503)."""

    default_code = "replica_lost"


@dataclass
class InFlight:
    """One routed request: its replica, the replica's incarnation when routed, and its Serve call."""

    request_id: str
    replica: int
    epoch: int
    call: Any = None
    lost: str | None = None
    closed: bool = False


@dataclass
class ReplicaState:
    """The router's view of one replica's process."""

    epoch: int = 0
    pid: int | None = None
    last_health: dict[str, Any] = field(default_factory=dict)


class ReplicaPool(PromptTools):
    """Routes requests over Serve handles of `EngineReplica` deployments."""

    def __init__(self, handles: list[Any], files: ModelFiles, description: dict[str, Any], *,
                 max_imbalance: int | None = None):
        backend = get_backend(files.tokenizer, description["vocab_size"], description["eos_token_ids"])
        super().__init__(files, description["max_model_len"], backend, description["compile_max_seconds"])
        self.handles = handles
        self.description = description
        options = {} if max_imbalance is None else {"max_imbalance": max_imbalance}
        self.router = PrefixRouter(len(handles), description["block_size"], **options)
        self.router_seconds = Histogram(ROUTER_BUCKETS)
        self.states = [ReplicaState() for _ in handles]
        self.snapshots: dict[int, dict[str, Any]] = {}
        self._in_flight: dict[str, InFlight] = {}
        self._monitor: asyncio.Task | None = None

    @classmethod
    def from_handles(cls, handles: list[Any], files: ModelFiles, **options: Any) -> "ReplicaPool":
        """Ask every replica to describe itself (blocking, outside an event loop) and build the pool
        over the replicas' model `files` (the router's tokenizer and chat template)."""
        return cls._described(handles, files, [h.describe.remote().result() for h in handles], options)

    @classmethod
    async def connect(cls, handles: list[Any], files: ModelFiles, **options: Any) -> "ReplicaPool":
        """`from_handles` for callers on an event loop (a Serve ingress)."""
        descriptions = await asyncio.gather(*(h.describe.remote() for h in handles))
        return cls._described(handles, files, descriptions, options)

    @classmethod
    def _described(cls, handles: list[Any], files: ModelFiles, descriptions: list[dict[str, Any]],
                   options: dict[str, Any]) -> "ReplicaPool":
        """The pool under the tightest replica's limits, knowing each replica's process."""
        pool = cls(handles, files, min(descriptions, key=lambda d: d["max_model_len"]), **options)
        for state, description in zip(pool.states, descriptions):
            state.pid = description["pid"]
        return pool

    def describe(self) -> str:
        return f"{len(self.handles)} replicas of {self.description['line']}"

    # ---- health -----------------------------------------------------------------------------------

    @property
    def is_healthy(self) -> bool:
        self._ensure_monitor()
        return any(r.up for r in self.router.replicas)

    def _ensure_monitor(self) -> None:
        if self._monitor is None or self._monitor.done():
            self._monitor = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.gather(*(self.probe(i) for i in range(len(self.handles))))
            await asyncio.sleep(PROBE_INTERVAL_S)

    async def probe(self, replica: int) -> bool:
        """Ask one replica for its health and update the routing state; True when it is serving."""
        state = self.states[replica]
        try:
            health = await asyncio.wait_for(self.handles[replica].health.remote(), PROBE_TIMEOUT_S)
        except asyncio.TimeoutError:
            state.last_health = {"healthy": False, "error": f"no answer within {PROBE_TIMEOUT_S:.0f}s"}
            self._set_up(replica, False)
            return False
        except Exception as exc:  # the actor died or is being replaced: its requests are gone
            state.last_health = {"healthy": False, "error": f"{type(exc).__name__}: {exc}"}
            self._lose(replica, state.epoch, f"replica {replica} is unreachable ({type(exc).__name__})")
            return False
        if state.pid is not None and health["pid"] != state.pid:
            self._lose(replica, state.epoch, f"replica {replica} (pid {state.pid}) died and was replaced")
        state.pid, state.last_health = health["pid"], health
        self._set_up(replica, health["healthy"])
        return health["healthy"]

    def _set_up(self, replica: int, up: bool) -> None:
        if self.router.replicas[replica].up != up:
            logger.warning("replica %d is %s", replica, "back in rotation" if up else "out of rotation")
        self.router.mark(replica, up)

    def _lose(self, replica: int, epoch: int, reason: str) -> None:
        """Incarnation `epoch` of the replica is gone: fail the requests routed to it (once)."""
        state = self.states[replica]
        if epoch != state.epoch:
            return
        lost = [f for f in self._in_flight.values() if f.replica == replica and f.epoch == epoch]
        state.epoch += 1
        self._set_up(replica, False)
        for flight in lost:
            flight.lost = reason
            if flight.call is not None:
                flight.call.cancel()

    async def replica_health(self) -> list[dict[str, Any]]:
        """Each replica's probe result, probed now."""
        await asyncio.gather(*(self.probe(i) for i in range(len(self.handles))))
        return [{"replica": i, "status": "ok" if load.up else "unavailable", **state.last_health}
                for i, (load, state) in enumerate(zip(self.router.replicas, self.states))]

    async def refresh_metrics(self) -> None:
        """Fetch every replica's metrics snapshot (a replica that does not answer keeps its last one)."""
        async def fetch(replica: int) -> None:
            with contextlib.suppress(Exception):
                self.snapshots[replica] = await asyncio.wait_for(self.handles[replica].metrics.remote(),
                                                                 PROBE_TIMEOUT_S)
        await asyncio.gather(*(fetch(i) for i in range(len(self.handles))))

    # ---- requests ---------------------------------------------------------------------------------

    def generate(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams, *,
                 prompt: str | None, priority: int) -> AsyncIterator[RequestOutput]:
        """Route the request now (503 if no replica is up) and iterate its outputs from the replica."""
        self._ensure_monitor()
        try:
            route = self.router.route(prompt_token_ids)
        except NoReplicaError as exc:
            raise EngineUnavailableError(f"no engine replica is available: {exc}", code="no_replica") from None
        self.router_seconds.observe(route.seconds)
        flight = InFlight(request_id, route.replica, self.states[route.replica].epoch)
        self._in_flight[request_id] = flight
        flight.call = self.handles[route.replica].options(stream=True).generate.remote(
            request_id, prompt_token_ids, params, prompt, priority)
        return self._outputs(flight)

    async def _outputs(self, flight: InFlight) -> AsyncIterator[RequestOutput]:
        from ray.exceptions import RayActorError, RayTaskError, TaskCancelledError

        try:
            async for output in flight.call:
                yield output
        except RayTaskError as exc:  # raised by the replica's code
            cause = exc.cause
            if isinstance(cause, APIError):
                raise cause from None
            raise InternalError(f"replica {flight.replica} failed the request: {cause!r}") from None
        except (RayActorError, TaskCancelledError) as exc:
            if flight.lost is None:
                if isinstance(exc, TaskCancelledError):  # cancelled by `abort`, not by a lost replica
                    raise
                self._lose(flight.replica, flight.epoch, f"replica {flight.replica} died ({type(exc).__name__})")
            reason = flight.lost or f"replica {flight.replica} died"
            raise ReplicaLostError(f"{reason}; request {flight.request_id} was lost, retry it") from None
        finally:
            self._close(flight)

    def abort(self, request_ids: list[str]) -> None:
        """Cancel requests on their replicas (unknown or finished ids are ignored)."""
        for request_id in request_ids:
            flight = self._in_flight.get(request_id)
            if flight is not None:
                self._close(flight)

    def _close(self, flight: InFlight) -> None:
        if flight.closed:
            return
        flight.closed = True
        self._in_flight.pop(flight.request_id, None)
        flight.call.cancel()
        self.router.finished(flight.replica)
