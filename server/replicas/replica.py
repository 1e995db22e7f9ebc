"""One engine replica: an `EngineClient` inside a Ray Serve replica actor.

`EngineReplica` is a plain class; `replica_deployment` makes it a Serve deployment of one replica
(`ReplicaPool` picks replicas itself, so each engine is its own deployment). Serve calls
`check_health`; an engine whose thread has died fails it and Serve replaces the replica.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from formwork.core.gc_policy import start_step_policy
from formwork.core.outputs import RequestOutput
from formwork.core.sampling_params import SamplingParams
from formwork.server.engine_client import EngineClient

#: A replica queues this many requests at most before Serve holds more back (Serve's default is 5).
MAX_ONGOING_REQUESTS = 1024
HEALTH_CHECK_PERIOD_S = 2.0
HEALTH_CHECK_TIMEOUT_S = 30.0


class EngineReplica:
    """Loads the model and serves request streams, aborts, metrics and health to the router."""

    def __init__(self, index: int, model_dir: str, engine_options: dict[str, Any], torch_threads: int | None):
        if torch_threads is not None:
            import torch

            torch.set_num_threads(torch_threads)
        self.index = index
        self.client = EngineClient.from_model(model_dir, **engine_options)
        self.client.structured_output.backend  # noqa: B018 - the vocabulary's grammar tables, before the freeze
        start_step_policy()  # as `formwork serve` does: start-up frozen, full collections between steps
        self.client.start()

    def describe(self) -> dict[str, Any]:
        """What the router needs: limits, the block size, the process and a log line."""
        core = self.client.engine.engine
        return {"index": self.index, "pid": os.getpid(), "node": _node_ip(), "max_model_len": self.client.max_model_len,
                "vocab_size": core.vocab_size, "eos_token_ids": list(core.eos_token_ids),
                "block_size": core.config.block_size, "compile_max_seconds": core.config.grammar_compile_budget_s,
                "model": Path(self.client.files.path).name, "line": self.client.describe()}

    async def generate(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams,
                       prompt: str | None, priority: int) -> AsyncIterator[RequestOutput]:
        """The request's cumulative outputs; cancelling the call (the router's `cancel()`) aborts it."""
        async for output in self.client.generate(request_id, prompt_token_ids, params, prompt=prompt,
                                                 priority=priority):
            yield output

    def abort(self, request_ids: list[str]) -> None:
        self.client.abort(request_ids)

    def health(self) -> dict[str, Any]:
        """The engine thread's state and the compile queue, for the router's `/health`."""
        return {"healthy": self.client.is_healthy, "pid": os.getpid(),
                "compile_queue": self.client.structured_output.compile_status()}

    def metrics(self) -> dict[str, Any]:
        """The engine's metrics snapshot with its compile queue gauges."""
        compiles = self.client.structured_output.compile_status()
        return {**self.client.metrics_snapshot(), "formwork:grammar_compiles_queued": compiles["queued"],
                "formwork:grammar_compiles_running": compiles["running"]}

    def check_health(self) -> None:
        """Serve's probe: raising makes Serve replace this replica."""
        if not self.client.is_healthy:
            raise RuntimeError(f"replica {self.index}: the engine thread has stopped")

    def __del__(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.shutdown()


def _node_ip() -> str:
    import ray

    return ray.util.get_node_ip_address()


def replica_deployment(index: int, model_dir: str, engine_options: dict[str, Any], *,
                       num_cpus: float, num_gpus: float, torch_threads: int | None):
    """The Serve application of replica `index` (one deployment, one replica)."""
    from ray import serve

    deployment = serve.deployment(EngineReplica, name=f"engine-{index}", num_replicas=1,
                                  max_ongoing_requests=MAX_ONGOING_REQUESTS,
                                  health_check_period_s=HEALTH_CHECK_PERIOD_S,
                                  health_check_timeout_s=HEALTH_CHECK_TIMEOUT_S,
                                  ray_actor_options={"num_cpus": num_cpus, "num_gpus": num_gpus})
    return deployment.bind(index, model_dir, engine_options, torch_threads)
