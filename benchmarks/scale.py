"""Data-parallel scaling on Ray Serve: DP=2 vs DP=1 throughput and the router's cost per request.

    .venv/bin/python benchmarks/scale.py [--requests 48] [--prompt-tokens 384] [--max-tokens 16]
                                         [--concurrency 16] [--repeats 2] [--two-nodes] [--write]

Two engine replicas of the demo model are deployed once on a local Ray instance, or with `--two-nodes`
on a two-node Ray cluster on this machine, one node per session (see benchmarks/ray_nodes.py: the
kernel may share the CPU per session); one logical CPU and one torch thread each, prefix caching off,
fresh random-token prompts every run, so the work is the model's. DP=1 routes to replica 0 only; DP=2 routes over both; runs alternate DP=1, DP=2 `--repeats`
times and the fastest of each is compared (token throughput: prompt + output tokens per second). The
CPU seconds each replica process used during a run (from /proc) show how much of the 2 cores the
replicas actually got on a shared machine.

Routing overhead is measured three ways: the routing decision alone (`PrefixRouter.route` over the
run's prompts, p50/p99), `ReplicaPool.generate` up to the Serve call being submitted (decision plus
Serve handle), and the whole Ray hop: the latency of a one-token request through the pool minus the
same request on an in-process engine (sequential, p50). `--write` stores the table in
benchmarks/results/scale.md (scale_two_nodes.md with `--two-nodes`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import cpu_name  # noqa: E402
from ray_nodes import RayNodes  # noqa: E402

from formwork.core.demo import demo_model_dir  # noqa: E402
from formwork.core.model_files import ModelFiles  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.server.engine_client import EngineClient  # noqa: E402
from formwork.server.replicas.cluster import ReplicaCluster, ReplicaSpec  # noqa: E402
from formwork.server.replicas.pool import ReplicaPool  # noqa: E402
from formwork.server.replicas.routing import PrefixRouter  # noqa: E402

ENGINE_OPTIONS = {"device": "cpu", "warmup": False, "enable_prefix_caching": False, "kv_cache_memory": 64 << 20,
                  "max_num_seqs": 16}
FIRST_TOKEN = 16  # random prompts avoid the demo tokenizer's special ids below this


@dataclass
class Run:
    """One throughput run."""

    replicas: int
    wall_s: float
    tokens: int
    requests: int
    replica_cpu_s: list[float]
    router_cpu_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_s

    @property
    def tokens_per_cpu_s(self) -> float:
        return self.tokens / sum(self.replica_cpu_s)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a local process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def prompts(count: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(FIRST_TOKEN, vocab) for _ in range(length)] for _ in range(count)]


async def collect(stream) -> int:
    """Output tokens of the request's final output."""
    final = None
    async for output in stream:
        final = output
    return len(final.outputs[0].token_ids)


async def throughput(pool: ReplicaPool, pids: list[int], batch: list[list[int]], max_tokens: int,
                     concurrency: int, tag: str) -> Run:
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True)
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int, ids: list[int]) -> int:
        async with gate:
            return await collect(pool.generate(f"{tag}-{i}", ids, params, prompt=None, priority=0))

    cpu_before = [cpu_seconds(pid) for pid in pids]
    router_before = time.process_time()
    start = time.perf_counter()
    outputs = await asyncio.gather(*(one(i, ids) for i, ids in enumerate(batch)))
    wall = time.perf_counter() - start
    used = [cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before)]
    return Run(len(pool.handles), wall, sum(outputs) + sum(map(len, batch)), len(batch), used,
               time.process_time() - router_before)


async def hop_latencies(pool: ReplicaPool, local: EngineClient, ids_list: list[list[int]]) -> tuple[list[float], list[float]]:
    """Sequential one-token requests, alternating the pool and the in-process engine: each one's latency
    in seconds, per side."""
    params = SamplingParams(max_tokens=1, temperature=0.0)
    sides: tuple[list[float], list[float]] = ([], [])
    for i, ids in enumerate(ids_list):
        for side, engine in zip(sides, (pool, local)):
            start = time.perf_counter()
            await collect(engine.generate(f"hop-{i}", ids, params, prompt=None, priority=0))
            side.append(time.perf_counter() - start)
    return sides


def submit_times(pool: ReplicaPool, ids_list: list[list[int]]) -> list[float]:
    """Seconds `ReplicaPool.generate` takes up to the Serve call being submitted (then aborted)."""
    params = SamplingParams(max_tokens=1, temperature=0.0)
    times = []
    for i, ids in enumerate(ids_list):
        start = time.perf_counter()
        pool.generate(f"submit-{i}", ids, params, prompt=None, priority=0)
        times.append(time.perf_counter() - start)
        pool.abort([f"submit-{i}"])
    return times


def decision_times(batch: list[list[int]], block_size: int, repeats: int) -> tuple[list[float], list[float]]:
    """Wall and thread-CPU seconds of each `PrefixRouter.route` call (CPU time leaves out the moments
    the kernel runs other jobs)."""
    router = PrefixRouter(2, block_size)
    wall, cpu = [], []
    for _ in range(repeats):
        for ids in batch:
            start = time.thread_time()
            route = router.route(ids)
            cpu.append(time.thread_time() - start)
            router.finished(route.replica)
            wall.append(route.seconds)
    return wall, cpu


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(args, pools: dict[int, ReplicaPool], pids: list[int], local: EngineClient, vocab: int,
                  block_size: int) -> tuple[list[Run], dict[str, list[float]]]:
    for dp, pool in pools.items():  # first requests pay one-off costs (allocations, lazy imports)
        await throughput(pool, pids, prompts(4 * dp, args.prompt_tokens, vocab, -dp), 2, 8, f"warm{dp}")
    runs = []
    for repeat in range(args.repeats):
        for dp in (1, 2):
            batch = prompts(args.requests, args.prompt_tokens, vocab, seed=repeat * 10 + dp)
            run = await throughput(pools[dp], pids, batch, args.max_tokens, args.concurrency, f"r{repeat}dp{dp}")
            print(f"  run {repeat + 1} DP={dp}: {run.wall_s:.2f} s, {run.tokens_per_s:.0f} tok/s, replica CPU s "
                  f"{', '.join(f'{c:.2f}' for c in run.replica_cpu_s)}, load {os.getloadavg()[0]:.1f}", flush=True)
            runs.append(run)
    short = prompts(args.overhead_requests, 24, vocab, seed=99)
    decision_wall, decision_cpu = decision_times(prompts(args.requests, args.prompt_tokens, vocab, 7), block_size, 20)
    hop_pool, hop_local = await hop_latencies(pools[1], local, short)
    overhead = {"decision": decision_wall, "decision_cpu": decision_cpu, "submit": submit_times(pools[2], short),
                "pool": hop_pool, "local": hop_local}
    overhead["router_histogram_mean"] = [pools[2].router_seconds.snapshot()["sum"] /
                                         max(1, pools[2].router_seconds.snapshot()["count"])]
    return runs, overhead


def report(args, runs: list[Run], overhead: dict[str, list[float]], load: tuple, load_after: tuple) -> str:
    best = {dp: min((r for r in runs if r.replicas == dp), key=lambda r: r.wall_s) for dp in (1, 2)}
    ratio = best[2].tokens_per_s / best[1].tokens_per_s
    mean_ratio = statistics.mean(r.tokens_per_s for r in runs if r.replicas == 2) / \
        statistics.mean(r.tokens_per_s for r in runs if r.replicas == 1)
    lines = ["| replicas | wall s | tokens/s | requests/s | replica CPU s (r0, r1) | cores used by replicas | "
             "tokens per replica CPU s | router process CPU s |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    for dp in (1, 2):
        r = best[dp]
        lines.append(f"| DP={dp} | {r.wall_s:.2f} | {r.tokens_per_s:.0f} | {r.requests / r.wall_s:.2f} | "
                     f"{', '.join(f'{c:.2f}' for c in r.replica_cpu_s)} | {sum(r.replica_cpu_s) / r.wall_s:.2f} | "
                     f"{r.tokens_per_cpu_s:.0f} | {r.router_cpu_s:.2f} |")
    us = 1e6
    ms = 1e3
    hop = statistics.median(overhead["pool"]) - statistics.median(overhead["local"])
    lines += [
        "",
        f"Throughput DP=2 / DP=1: **{ratio:.2f}x** (fastest runs), {mean_ratio:.2f}x (mean of runs); target 1.6x.",
        "",
        "| routing overhead per request | p50 | p99 |",
        "| --- | ---: | ---: |",
        f"| routing decision (`PrefixRouter.route`, {args.prompt_tokens}-token prompts) | "
        f"{pct(overhead['decision'], 0.5) * us:.1f} µs | {pct(overhead['decision'], 0.99) * us:.1f} µs |",
        f"| the same, thread CPU time | {pct(overhead['decision_cpu'], 0.5) * us:.1f} µs | "
        f"{pct(overhead['decision_cpu'], 0.99) * us:.1f} µs |",
        f"| `ReplicaPool.generate` until the Serve call is submitted | {pct(overhead['submit'], 0.5) * ms:.3f} ms | "
        f"{pct(overhead['submit'], 0.99) * ms:.3f} ms |",
        f"| one-token request through the pool (DP=1, Ray Serve hop) | {pct(overhead['pool'], 0.5) * ms:.1f} ms | "
        f"{pct(overhead['pool'], 0.99) * ms:.1f} ms |",
        f"| the same request on an in-process engine | {pct(overhead['local'], 0.5) * ms:.1f} ms | "
        f"{pct(overhead['local'], 0.99) * ms:.1f} ms |",
        "",
        f"Routing decision mean in the DP=2 runs (the pool's `formwork:router_seconds`): "
        f"{overhead['router_histogram_mean'][0] * us:.1f} µs; target ≤ 2 ms. The Ray Serve hop adds "
        f"{hop * ms:.1f} ms (p50) to a one-token request (alternating pool and in-process requests). The "
        f"router process spends {best[2].router_cpu_s / best[2].requests * ms:.1f} ms of CPU per request in the "
        f"DP=2 run (Ray's handle, the {args.max_tokens} streamed outputs' transfer and unpickling, asyncio).",
        "",
        f"Load average (1/5/15 min) before: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; after: "
        f"{load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f} on {os.cpu_count()} cores.",
    ]
    return "\n".join(lines)


def autogroup_note() -> str:
    """Whether the kernel shares the CPU per session (autogroup) rather than per thread."""
    try:
        enabled = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        return ""
    if not enabled:
        return ""
    return ("Scheduler autogroups are on (kernel.sched_autogroup_enabled=1): the kernel shares the CPU fairly "
            "between sessions, not threads, so processes of one session share one session's share, and a second "
            "replica in the same session gets no more CPU while other sessions keep the cores busy.")


def write_results(table: str, args) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    sessions = " --two-nodes" if args.two_nodes else ""
    command = (f".venv/bin/python benchmarks/scale.py --requests {args.requests} --prompt-tokens "
               f"{args.prompt_tokens} --max-tokens {args.max_tokens} --concurrency {args.concurrency} "
               f"--repeats {args.repeats}{sessions} --write")
    placement = ("on a two-node Ray cluster on this machine, each node in a session of its own (`--two-nodes`), "
                 "so each replica gets its own fair share of the CPU" if args.two_nodes else
                 "one local Ray instance, every process of the run in the benchmark's session")
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = f"""# Data-parallel scaling on Ray Serve

Command: `{command}`

Workload: {args.requests} requests of {args.prompt_tokens} random tokens, {args.max_tokens} output tokens each
(greedy, ignore_eos), at most {args.concurrency} in flight; demo model (Llama, 4 layers, hidden 256), prefix
caching off, max_num_seqs 16. Two replicas deployed once ({placement}; 1 logical CPU and 1 torch thread
each); DP=1 routes to one of them. Runs alternate DP=1, DP=2, {args.repeats} time(s); the
fastest of each is shown.

{table}

Machine: {cpu_name()} ({platform.machine()}, {os.cpu_count()} cores shared with other jobs), Python
{platform.python_version()}. Measured {when} on {commit}. The box is shared: the replicas get the cores the
other jobs leave, so the DP ratio is bounded by the "cores used by replicas" column. {autogroup_note()}
"""
    out = REPO / "benchmarks" / "results" / ("scale_two_nodes.md" if args.two_nodes else "scale.md")
    out.write_text(text)
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=48)
    parser.add_argument("--prompt-tokens", type=int, default=384)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--overhead-requests", type=int, default=40)
    parser.add_argument("--two-nodes", action="store_true",
                        help="deploy on a two-node Ray cluster on this machine, each node in a session of its own "
                             "(benchmarks/ray_nodes.py), so each replica gets its own fair share of the CPU, as on "
                             "separate machines; default: one local Ray instance")
    parser.add_argument("--write", action="store_true", help="write benchmarks/results/scale.md")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    # Ray's memory monitor kills workers when the whole machine nears full memory; here other people's
    # jobs fill it, so it would kill the replicas mid-run.
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    load = os.getloadavg()
    model_dir = str(demo_model_dir())
    files = ModelFiles.load(Path(model_dir))
    print(f"deploying 2 replicas on {'two local Ray nodes' if args.two_nodes else 'a local Ray instance'} ...",
          flush=True)
    nodes = RayNodes(num_nodes=2, cpus_per_node=1) if args.two_nodes else None
    address = nodes.start() if nodes else None
    try:
        cluster = ReplicaCluster.deploy(ReplicaSpec(model_dir, ENGINE_OPTIONS, 2, torch_threads=1), ray_address=address)
    except BaseException:
        if nodes:
            nodes.stop()
        raise
    try:
        pools = {1: ReplicaPool.from_handles(cluster.handles[:1], files),
                 2: ReplicaPool.from_handles(cluster.handles, files)}
        pids = [state.pid for state in pools[2].states]
        local = EngineClient.from_model(model_dir, **ENGINE_OPTIONS)
        local.start()
        vocab = pools[2].description["vocab_size"]
        block_size = pools[2].description["block_size"]
        runs, overhead = asyncio.run(measure(args, pools, pids, local, vocab, block_size))
        local.shutdown()
    finally:
        cluster.shutdown()
        if nodes:
            nodes.stop()
    table = report(args, runs, overhead, load, os.getloadavg())
    print(table)
    if args.write:
        write_results(table, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
