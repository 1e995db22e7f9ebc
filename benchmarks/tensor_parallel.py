"""Tensor parallelism on the CPU (issue 26): TP=1 and TP=N side by side on one random Llama, one torch
thread per rank (gloo over loopback). On the CPU this is a correctness check, not a speed target: greedy
tokens must agree; start-up, single-request TPOT and batch throughput show what the worker processes and
the per-layer all-reduces cost here. On a machine with several GPUs, `benchmarks/gpu.py
--tensor-parallel-size N` measures scaling.

    .venv/bin/python benchmarks/tensor_parallel.py [--size 2] [--requests 8] [--tokens 32] [--repeats 3] [--write]

`--write` stores the table in benchmarks/results/tensor_parallel.md.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
from machine import cpu_name  # noqa: E402

# ~47M parameters: every rank's matmuls outweigh its collectives' latency
MODEL_SHAPE = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=8,
                   num_key_value_heads=4, max_position_embeddings=512)


def start(model_dir: Path, size: int, max_num_seqs: int):
    """An LLM with `size` ranks and its start-up seconds."""
    from formwork.core import LLM

    started = time.perf_counter()
    llm = LLM(model_dir, device="cpu", dtype="float32", max_num_seqs=max_num_seqs, tensor_parallel_size=size)
    return llm, time.perf_counter() - started


def run(llm, prompts: list[list[int]], tokens: int) -> dict:
    """One request's TPOT (ms), the batch's output tokens/s and every request's greedy tokens."""
    from formwork.core import SamplingParams

    params = SamplingParams(temperature=0, max_tokens=tokens, ignore_eos=True)
    single = llm.generate(prompts[:1], params, use_tqdm=False)[0].metrics
    started = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    seconds = time.perf_counter() - started
    return dict(tpot_ms=(single.last_token_time - single.first_token_time) / (tokens - 1) * 1e3,
                throughput=len(prompts) * tokens / seconds, tokens=[o.outputs[0].token_ids for o in outputs])


def best(runs: list[dict], startup: float) -> dict:
    return dict(startup_s=startup, tpot_ms=min(r["tpot_ms"] for r in runs),
                throughput=max(r["throughput"] for r in runs), tokens=runs[0]["tokens"])


def render(size: int, one: dict, many: dict, agree: float, args: argparse.Namespace) -> str:
    load = os.getloadavg()[0]
    lines = [f"# Tensor parallelism on the CPU: TP=1 vs TP={size}", "",
             f"Command: `python benchmarks/tensor_parallel.py --size {size} --requests {args.requests} "
             f"--tokens {args.tokens} --repeats {args.repeats}` (best of the alternating runs). Random Llama {MODEL_SHAPE}, float32, one torch thread per rank, gloo "
             f"over loopback. {cpu_name()}, {os.cpu_count()} cores, 1-minute load average {load:.1f} at the end; "
             f"measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}.", "",
             f"| figure | TP=1 | TP={size} | TP={size} / TP=1 |", "|---|---:|---:|---:|",
             f"| start-up (load, KV pool{', worker processes' if size > 1 else ''}) | {one['startup_s']:.1f} s | "
             f"{many['startup_s']:.1f} s | {many['startup_s'] / one['startup_s']:.2f}x |",
             f"| TPOT, one request, {args.tokens} tokens | {one['tpot_ms']:.1f} ms | {many['tpot_ms']:.1f} ms | "
             f"{many['tpot_ms'] / one['tpot_ms']:.2f}x |",
             f"| throughput, {args.requests} requests x {args.tokens} tokens | {one['throughput']:.0f} tok/s | "
             f"{many['throughput']:.0f} tok/s | {many['throughput'] / one['throughput']:.2f}x |",
             f"| greedy tokens equal to TP=1 | | {agree:.0%} | |", "",
             "The ratios swing with the shared machine's load (with the load average near 15, two single runs "
             "minutes apart gave 1.86x and 0.94x for the throughput); the TP start-up is mostly the workers' "
             "interpreter and torch import.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2, help="tensor-parallel ranks to compare with one")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32, help="output tokens per request (greedy, ignore_eos)")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs; the best of each is reported")
    parser.add_argument("--write", action="store_true", help="store the table in benchmarks/results/")
    args = parser.parse_args(argv)
    if args.size < 2:
        parser.error("--size must be at least 2 (it is compared with one rank)")
    torch.set_num_threads(1)  # and so one per worker: they take the parent's thread count
    from tiny_models import build_tiny_model

    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="formwork-tp-bench-") as tmp:
        model_dir = build_tiny_model(Path(tmp) / "model", "llama", seed=0, **MODEL_SHAPE)
        prompts = [[rng.randrange(3, 400) for _ in range(rng.randint(16, 64))] for _ in range(args.requests)]
        one, one_start = start(model_dir, 1, len(prompts))
        many, many_start = start(model_dir, args.size, len(prompts))
        try:
            runs: dict[int, list[dict]] = {1: [], args.size: []}
            for _ in range(args.repeats):  # alternating, so both see the same spells of load
                for size, llm in ((1, one), (args.size, many)):
                    runs[size].append(run(llm, prompts, args.tokens))
        finally:
            many.close()
        one, many = best(runs[1], one_start), best(runs[args.size], many_start)
    agree = sum(a == b for a, b in zip(one["tokens"], many["tokens"])) / len(prompts)
    text = render(args.size, one, many, agree, args)
    print(text)
    if args.write:
        (REPO / "benchmarks" / "results" / "tensor_parallel.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
