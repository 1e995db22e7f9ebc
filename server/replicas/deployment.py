"""formwork on a Ray cluster with `serve run` / `serve deploy`: the OpenAI routes as a Serve ingress
over N engine replicas (the same router, replicas and routes as `formwork serve --data-parallel-size`).

    ray start --head                          # or an existing cluster (RAY_ADDRESS)
    serve run formwork.server.replicas.deployment:build \\
        model=/models/Qwen2.5-7B-Instruct data_parallel_size=4 gpus_per_replica=1 served_model_name=qwen

or, in a Serve config file for `serve deploy config.yaml`:

    applications:
      - name: formwork
        route_prefix: /
        import_path: formwork.server.replicas.deployment:build
        args: {model: /models/Qwen2.5-7B-Instruct, data_parallel_size: 4, gpus_per_replica: 1,
               served_model_name: qwen, engine: {max_num_seqs: 128, dtype: bfloat16}}

Serve's HTTP proxy then serves /v1/completions, /v1/chat/completions, /v1/models, /health (one entry
per replica) and /metrics (merged) on port 8000. Every node needs formwork installed and the model
directory at the same path. Keep one ingress replica: the router's prefix table and load counts are
per ingress, so several ingresses would each route with partial knowledge.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ray import serve

from formwork.core.config import EngineConfig
from formwork.core.model_files import ModelFiles
from formwork.server.app import ServerConfig
from formwork.server.replicas.front import build_replicated_app
from formwork.server.replicas.pool import ReplicaPool
from formwork.server.replicas.replica import replica_deployment

ENGINE_FIELDS = frozenset(f.name for f in dataclasses.fields(EngineConfig))
BUILD_ARGS = frozenset({"model", "data_parallel_size", "cpus_per_replica", "gpus_per_replica", "ingress_cpus",
                        "served_model_name", "api_key", "engine"})


@serve.deployment(num_replicas=1, max_ongoing_requests=1024)
@serve.ingress()
class FormworkIngress:
    """The OpenAI routes over the engine replicas bound to it."""

    def __init__(self, model_dir: str, server_config: dict[str, Any], *engines: Any):
        self.model_dir = model_dir
        self.server_config = server_config
        self.engines = list(engines)

    async def __serve_build_asgi_app__(self):
        pool = await ReplicaPool.connect(self.engines, ModelFiles.load(Path(self.model_dir)))
        return build_replicated_app(pool, ServerConfig(**self.server_config))


def build(args: dict[str, Any]) -> serve.Application:
    """The application from `serve run` arguments: `model` (default: the demo model),
    `data_parallel_size` (1), `cpus_per_replica` (1), `gpus_per_replica` (0), `ingress_cpus` (0: the
    routes only route; Serve's default of 1 would leave it unscheduled on a node the replicas fill),
    `served_model_name`, `api_key`, and `engine`: `EngineConfig` fields for every replica."""
    unknown = set(args) - BUILD_ARGS
    if unknown:
        raise ValueError(f"unknown arguments {sorted(unknown)}; expected some of {sorted(BUILD_ARGS)}")
    engine = dict(args.get("engine") or {})
    bad = set(engine) - ENGINE_FIELDS
    if bad:
        raise ValueError(f"unknown engine options {sorted(bad)}; EngineConfig has {sorted(ENGINE_FIELDS)}")
    EngineConfig(**engine)  # a bad value fails here, not in every replica
    if args.get("model"):
        model_dir, name = str(Path(args["model"]).resolve()), args["model"]
    else:
        from formwork.core.demo import DEMO_MODEL_NAME, demo_model_dir

        model_dir, name = str(demo_model_dir()), DEMO_MODEL_NAME
    cpus = float(args.get("cpus_per_replica", 1))
    engines = [replica_deployment(i, model_dir, engine, num_cpus=cpus,
                                  num_gpus=float(args.get("gpus_per_replica", 0)), torch_threads=max(1, int(cpus)))
               for i in range(int(args.get("data_parallel_size", 1)))]
    config = {"served_model_name": args.get("served_model_name") or name, "api_key": args.get("api_key"),
              "model_root": model_dir}
    ingress = FormworkIngress.options(ray_actor_options={"num_cpus": float(args.get("ingress_cpus", 0))})
    return ingress.bind(model_dir, config, *engines)
