"""`formwork serve --data-parallel-size N [--ray-address ADDR]`: deploy the replicas, route to them from
this process's OpenAI routes, take them down on exit."""

from __future__ import annotations

import argparse
import logging
import time

from formwork.server.replicas.cluster import RayMissingError, ReplicaCluster, ReplicaSpec

logger = logging.getLogger("formwork.serve")


def gpus_per_replica(args: argparse.Namespace) -> float:
    """--gpus-per-replica, or 1 when the engines will run on CUDA (asked for, or auto with a local GPU)."""
    if args.gpus_per_replica is not None:
        return args.gpus_per_replica
    if args.device.startswith("cuda"):
        return 1.0
    if args.device == "auto":
        import torch

        return 1.0 if torch.cuda.is_available() else 0.0
    return 0.0


def replica_spec(args: argparse.Namespace, model_dir: str) -> ReplicaSpec:
    """Each replica's engine options and resources; a replica spans `tensor_parallel_size` GPUs."""
    from formwork.server.serve_cmd import engine_options

    options = engine_options(args)
    gpus = gpus_per_replica(args) * (options.get("tensor_parallel_size") or 1)
    return ReplicaSpec(model_dir, options, args.data_parallel_size, cpus_per_replica=args.cpus_per_replica,
                       gpus_per_replica=gpus, torch_threads=max(1, int(args.cpus_per_replica)))


def run_replicas(args: argparse.Namespace) -> int:
    """Deploy the replicas, serve until interrupted, then take the replicas down; the exit code."""
    from formwork.core.config import ConfigError, EngineConfig
    from formwork.core.model_files import ModelFiles, ModelLoadError
    from formwork.server.replicas.front import build_replicated_app
    from formwork.server.replicas.pool import ReplicaPool
    from formwork.server.serve_cmd import resolve_model, serve_http, server_config, startup_failure

    try:
        model_dir, default_name = resolve_model(args.model)
        files = ModelFiles.load(model_dir)  # a bad model fails here, before Ray starts
        spec = replica_spec(args, str(model_dir.resolve()))
        EngineConfig(**{k: v for k, v in spec.engine_options.items() if v is not None})
    except (ConfigError, ModelLoadError, FileNotFoundError, ValueError) as exc:
        return startup_failure(exc)
    started = time.perf_counter()
    where = f"the Ray cluster at {args.ray_address}" if args.ray_address else "a local Ray instance"
    logger.info("deploying %d replicas of %s on %s ...", spec.num_replicas, model_dir, where)
    try:
        cluster = ReplicaCluster.deploy(spec, ray_address=args.ray_address)
    except RayMissingError as exc:
        logger.error("%s", exc)
        return 2
    except (ConnectionError, RuntimeError) as exc:
        logger.error("cannot start the replicas: %s", exc)
        return 1
    try:
        pool = ReplicaPool.from_handles(cluster.handles, files)
        logger.info("deployed in %.1fs: %s", time.perf_counter() - started, pool.describe())
        config = server_config(args, default_name, model_dir)
        serve_http(build_replicated_app(pool, config), args, config)
    finally:
        cluster.shutdown()
    return 0
