"""Start (or join) Ray, deploy N engine replicas on Ray Serve, and take them down again.

Each replica is its own Serve application `<prefix>-<i>` holding one `EngineReplica` deployment with
no HTTP route: the router (`ReplicaPool`) reaches them through their handles. On one machine a
local Ray instance is started with small resources (no dashboard, a 100 MB object store, one
logical CPU per replica); with `ray_address` the replicas join that cluster and Ray is left running.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

from formwork.server.replicas import child_processes

logger = logging.getLogger(__name__)

LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024
LOCAL_START_ATTEMPTS = 3  # Ray gives its raylet a fixed 30 s to register, which an oversubscribed box can miss


class RayMissingError(ImportError):
    """Ray Serve is not installed."""


def import_serve() -> Any:
    """`ray.serve`, or a `RayMissingError` saying how to install it."""
    try:
        from ray import serve
    except ImportError as exc:
        raise RayMissingError(f"data-parallel replicas need Ray Serve ({exc}); install it with "
                              "pip install 'formwork[ray]'") from None
    return serve


@dataclass
class ReplicaSpec:
    """How to build each replica: the model, the engine options and each replica's resources."""

    model_dir: str
    engine_options: dict[str, Any]
    num_replicas: int
    cpus_per_replica: float = 1.0
    gpus_per_replica: float = 0.0
    torch_threads: int | None = None

    def __post_init__(self) -> None:
        if self.num_replicas < 1:
            raise ValueError(f"the number of replicas must be at least 1, got {self.num_replicas}")
        if self.cpus_per_replica < 0 or self.gpus_per_replica < 0:
            raise ValueError(f"invalid replica resources: {self.cpus_per_replica} CPUs, {self.gpus_per_replica} GPUs")


@dataclass
class ReplicaCluster:
    """The deployed replicas' handles and what to undo on shutdown."""

    handles: list[Any]
    app_names: list[str]
    started_ray: bool

    @classmethod
    def deploy(cls, spec: ReplicaSpec, *, ray_address: str | None = None, app_prefix: str = "formwork-engine",
               object_store_bytes: int = LOCAL_OBJECT_STORE_BYTES) -> "ReplicaCluster":
        """Start or join Ray, start Serve without HTTP proxies, and deploy `spec.num_replicas` replicas
        (blocking until every replica has loaded its model)."""
        serve = import_serve()
        import ray

        from formwork.server.replicas.replica import replica_deployment

        started = ray_address is None
        if started:
            _start_local_ray(num_cpus=max(1, math.ceil(spec.num_replicas * spec.cpus_per_replica)),
                             object_store_bytes=object_store_bytes)
        else:
            ray.init(address=ray_address, namespace="formwork", log_to_driver=False)
        try:
            serve.start(proxy_location="Disabled")
            names = [f"{app_prefix}-{i}" for i in range(spec.num_replicas)]
            targets = [serve.RunTarget(replica_deployment(i, spec.model_dir, spec.engine_options,
                                                          num_cpus=spec.cpus_per_replica,
                                                          num_gpus=spec.gpus_per_replica,
                                                          torch_threads=spec.torch_threads),
                                       name=name, route_prefix=None)
                       for i, name in enumerate(names)]
            handles = serve.run_many(targets)
        except BaseException:
            _release(started)
            raise
        return cls(handles, names, started)

    def shutdown(self) -> None:
        """Delete the replicas' applications; stop Serve and Ray if this process started them."""
        serve = import_serve()
        if not self.started_ray:
            for name in self.app_names:
                serve.delete(name)
        _release(self.started_ray)


def _start_local_ray(*, num_cpus: int, object_store_bytes: int, attempts: int = LOCAL_START_ATTEMPTS) -> None:
    """Start a local Ray instance, again (after killing the half-started node's processes) when its
    node timed out registering: Ray waits a fixed 30 s for that, which a loaded machine can exceed."""
    import ray

    for attempt in range(1, attempts + 1):
        before = child_processes.descendants()
        try:
            ray.init(address="local", num_cpus=num_cpus, object_store_memory=object_store_bytes,
                     include_dashboard=False, log_to_driver=False, namespace="formwork")
            return
        except Exception as exc:  # Ray raises a bare Exception for this timeout
            timed_out = "timed out during startup" in str(exc)
            if timed_out:
                # Ray had not recorded the node yet, so its shutdown leaves the node's processes running
                ray.shutdown()
                child_processes.kill_started_since(before)
            if not timed_out or attempt == attempts:
                raise
            logger.warning("the local Ray node timed out during start-up (attempt %d of %d); starting it again",
                           attempt, attempts)


def _release(started_ray: bool) -> None:
    import ray
    from ray import serve

    if started_ray:
        serve.shutdown()
    ray.shutdown()
