"""formwork's OpenAI routes over a `ReplicaPool`: the same handlers, with `/health` per replica and
`/metrics` merged over replicas."""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from formwork.server.app import OpenAIServer, ServerConfig, build_app
from formwork.server.errors import EngineUnavailableError
from formwork.server.replicas.metrics import replica_metrics_registry
from formwork.server.replicas.pool import ReplicaPool


class ReplicatedServer(OpenAIServer):
    """`OpenAIServer` whose engine is a `ReplicaPool`."""

    engine: ReplicaPool

    def build_metrics_registry(self) -> CollectorRegistry:
        return replica_metrics_registry(self.engine, self.config.served_model_name)

    async def health(self, http: Request) -> Response:
        """200 while some replica serves (each replica's state listed), 503 when none does."""
        replicas = await self.engine.replica_health()
        serving = sum(r["status"] == "ok" for r in replicas)
        if not serving:
            states = "; ".join(f"replica {r['replica']}: {r.get('error', 'engine stopped')}" for r in replicas)
            raise EngineUnavailableError(f"no engine replica is serving ({states})", code="no_replica")
        return JSONResponse({"status": "ok", "replicas_serving": serving, "replicas": replicas})

    async def metrics(self, http: Request) -> Response:
        await self.engine.refresh_metrics()
        return await super().metrics(http)


def build_replicated_app(pool: ReplicaPool, config: ServerConfig):
    """The ASGI app serving `pool` under `config.served_model_name`."""
    return build_app(pool, config, ReplicatedServer)
