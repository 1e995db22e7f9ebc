"""`formwork serve`: load a model (or the embedded demo model) and serve the OpenAI API with uvicorn."""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path

from formwork.cli.args import positive_int
from formwork.core import gc_policy
from formwork.server.reasoning import REASONING_PARSERS

DEVICE_HELP = "auto (CUDA when available, else the CPU), cpu, cuda or cuda:N"

logger = logging.getLogger("formwork.serve")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes from `1073741824`, `512MiB`, `2G`, `256m` (binary units)."""
    match = _SIZE.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 512MiB, 2GiB or a byte count)")
    value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be positive, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A number in (0, 1], e.g. 0.9."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text!r}")
    return value


def resource_amount(text: str) -> float:
    """A non-negative number of CPUs or GPUs, e.g. 1 or 0.5."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "serve", help="serve a model over the OpenAI-compatible HTTP API",
        description="Serve a Hugging Face model directory (default: the embedded demo model) with "
                    "/v1/completions, /v1/chat/completions, /v1/models, /health and /metrics.")
    parser.add_argument("--model", default=None, help="model directory (default: the embedded demo model)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", default=None,
                        help="model name clients must send (default: --model as given, or the demo's name)")
    parser.add_argument("--max-model-len", type=positive_int, default=None, help="context limit in tokens")
    parser.add_argument("--max-num-seqs", type=positive_int, default=64, help="sequences per batch")
    parser.add_argument("--max-num-batched-tokens", type=positive_int, default=2048, help="tokens per step")
    parser.add_argument("--kv-cache-memory", type=parse_size, default=None,
                        help="KV-cache budget, e.g. 256MiB (default: the engine's)")
    parser.add_argument("--max-waiting-requests", type=positive_int, default=256,
                        help="waiting-queue limit; beyond it requests get 503 with Retry-After")
    parser.add_argument("--device", default="auto", help=f"where the model runs: {DEVICE_HELP} (default: auto)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "float16", "bfloat16"],
                        help="weights and activations; auto is the checkpoint's (float16 becomes float32 on CPU)")
    parser.add_argument("--gpu-memory-utilization", type=fraction, default=None,
                        help="fraction of the GPU's total memory the engine may use; the KV cache gets what is "
                             "left after weights and a profiled step (default 0.9; CUDA only)")
    parser.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=None,
                        help="replay decode steps as CUDA graphs (default: on for CUDA; refused on the CPU)")
    parser.add_argument("--async-scheduling", action=argparse.BooleanOptionalAction, default=None,
                        help="launch each step before the previous step's tokens are read, so the CPU's work "
                             "overlaps the GPU's (default: on for CUDA with one rank)")
    parser.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=True,
                        help="run every kernel variant once before serving, so no request pays a compile "
                             "(default: on)")
    parser.add_argument("--cpu-threads", type=positive_int, default=None,
                        help="torch threads for a forward on the CPU (default: torch's, leaving one core for "
                             "the server and grammar compiles when torch would take them all)")
    parser.add_argument("--tensor-parallel-size", type=positive_int, default=1,
                        help="shard the model over N processes (Megatron-style; N GPUs on CUDA, gloo on the CPU)")
    parser.add_argument("--no-prefix-caching", action="store_true", help="disable the prefix cache")
    parser.add_argument("--seed", type=int, default=0, help="engine seed for unseeded requests")
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1 routes")
    parser.add_argument("--max-body-bytes", type=parse_size, default=None, help="request body limit (413)")
    parser.add_argument("--max-schema-bytes", type=parse_size, default=None, help="constraint size limit (400)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--reasoning-parser", default=None, choices=list(REASONING_PARSERS),
                        help="the model thinks first (<think>...</think>): chat replies carry the thinking as "
                             "reasoning_content, and response_format constrains only the answer after it")
    replicas = parser.add_argument_group("data parallelism (Ray Serve; pip install 'formwork[ray]')")
    replicas.add_argument("--data-parallel-size", type=positive_int, default=1,
                          help="engine replicas, each a Ray Serve replica behind this server's routes, "
                               "routed by prompt prefix then load (default 1: one in-process engine)")
    replicas.add_argument("--ray-address", default=None,
                          help="join this Ray cluster (e.g. ray://head:10001 or auto) instead of starting a "
                               "local Ray instance; replicas go through Ray even with --data-parallel-size 1")
    replicas.add_argument("--cpus-per-replica", type=resource_amount, default=1.0,
                          help="Ray CPUs each replica reserves; also its torch threads (default 1)")
    replicas.add_argument("--gpus-per-replica", type=resource_amount, default=None,
                          help="Ray GPUs each replica reserves (default: 1 when --device is cuda*, or auto "
                               "with CUDA on this machine; else 0)")
    parser.set_defaults(func=run)
    return parser


def startup_failure(exc: Exception) -> int:
    """Log why the server cannot start; the exit code: 2 for a bad engine option, 1 for a model
    that does not load."""
    from formwork.core.config import ConfigError

    if isinstance(exc, ConfigError):
        logger.error("invalid engine option: %s", exc)
        return 2
    logger.error("cannot load the model: %s", exc)
    return 1


def run(args: argparse.Namespace) -> int:
    """Load the model, build the app and run uvicorn until interrupted; returns the exit code."""
    from formwork.core.config import ConfigError
    from formwork.core.model_files import ModelLoadError
    from formwork.server.app import build_app
    from formwork.server.engine_client import EngineClient

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.data_parallel_size > 1 or args.ray_address is not None:
        from formwork.server.replicas.serve_replicas import run_replicas

        return run_replicas(args)
    try:
        model_dir, default_name = resolve_model(args.model)
        started = time.perf_counter()
        logger.info("loading model from %s ...", model_dir)
        engine = EngineClient.from_model(model_dir, **engine_options(args))
    except (ConfigError, ModelLoadError, FileNotFoundError, ValueError) as exc:
        return startup_failure(exc)
    engine.structured_output.backend  # noqa: B018 - the vocabulary's grammar tables, before the freeze
    logger.info("loaded in %.1fs: %s", time.perf_counter() - started, engine.describe())
    core_config = engine.engine.engine.config
    logger.info("device %s, CUDA graphs %s, async scheduling %s, warm-up %s", core_config.device,
                "on" if core_config.use_cuda_graphs else "off", "on" if core_config.use_async_scheduling else "off",
                "done" if core_config.use_warmup else "off")
    gc_policy.start_step_policy()  # start-up frozen; full collections run between engine steps, not inside them
    config = server_config(args, default_name, model_dir)
    app = build_app(engine, config)
    engine.start()
    try:
        serve_http(app, args, config)
    finally:
        engine.shutdown()
    return 0


def engine_options(args: argparse.Namespace) -> dict:
    """The `EngineConfig` fields the command line sets (None means the engine's default); with
    --data-parallel-size every replica's engine gets the same (tensor_parallel_size included: each
    replica then reserves that many GPUs)."""
    return dict(max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
                max_num_batched_tokens=args.max_num_batched_tokens, kv_cache_memory=args.kv_cache_memory,
                max_waiting_requests=args.max_waiting_requests, enable_prefix_caching=not args.no_prefix_caching,
                seed=args.seed, device=args.device, dtype=args.dtype,
                gpu_memory_utilization=args.gpu_memory_utilization, cuda_graphs=args.cuda_graphs,
                async_scheduling=args.async_scheduling, warmup=args.warmup,
                tensor_parallel_size=args.tensor_parallel_size, cpu_threads=args.cpu_threads)


def server_config(args: argparse.Namespace, default_name: str, model_dir: Path):
    """The HTTP layer's settings from the command line."""
    from formwork.server.app import ServerConfig

    config = ServerConfig(served_model_name=args.served_model_name or default_name, api_key=args.api_key,
                          model_root=str(model_dir), reasoning_parser=args.reasoning_parser)
    if args.max_body_bytes:
        config.max_body_bytes = args.max_body_bytes
    if args.max_schema_bytes:
        config.max_schema_bytes = args.max_schema_bytes
    return config


def serve_http(app, args: argparse.Namespace, config) -> None:
    """Run uvicorn on `app` until interrupted."""
    import uvicorn

    logger.info("serving %r on http://%s:%d (auth %s)", config.served_model_name, args.host, args.port,
                "on" if args.api_key else "off")
    uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level,
                                  timeout_graceful_shutdown=5)).run()


freeze_startup_heap = gc_policy.freeze_startup_heap  # where the benchmarks and replicas import it from


def resolve_model(model: str | None) -> tuple[Path, str]:
    """The model directory and its default served name."""
    if model is not None:
        return Path(model), model
    from formwork.core.demo import DEMO_MODEL_NAME, demo_model_dir

    return demo_model_dir(), DEMO_MODEL_NAME
