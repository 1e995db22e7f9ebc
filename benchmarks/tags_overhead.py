"""The engine's per-token work around the forward under tagged regions' free text (issue 24's `auto`
tool mode) vs unconstrained, on `benchmarks/structured.py`'s workload, alternating in one process.

The forward (the model) is the same work in both modes and, on a loaded shared box, its thread CPU
swings by 10% from run to run, which hides a few percent of overhead in whole-step ratios.  This
splits each run's thread CPU (`time.thread_time`, the engine thread only) into the forward and the
rest (scheduling, masks, sampling, matchers, detokenizing) and reports both per output token.

    .venv/bin/python benchmarks/tags_overhead.py [--requests 32] [--max-tokens 64] [--runs 6]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from structured import resolve_model, run_mode, workload  # noqa: E402

MODES = ("unconstrained", "tags (free text)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--runs", type=int, default=6)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    from formwork.core.engine import LLMEngine

    model_dir, model = resolve_model(args.model, Path(tempfile.mkdtemp(prefix="tags-overhead-")))
    engine = LLMEngine(model_dir, max_num_seqs=args.requests, enable_prefix_caching=False)
    work, params = workload(args.requests, args.max_tokens)
    lengths = run_mode(engine, work, params, "constrained")["lengths"]  # the lengths both modes generate
    forward_cpu = [0.0]
    forward = engine.runner.forward

    def timed_forward(batch):
        start = time.thread_time()
        try:
            return forward(batch)
        finally:
            forward_cpu[0] += time.thread_time() - start

    engine.runner.forward = timed_forward
    for mode in MODES:  # warm-up: grammar and mask caches
        run_mode(engine, work, params, mode, lengths)
    rest: dict[str, list[float]] = {mode: [] for mode in MODES}
    model_us: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.runs):
        for mode in MODES:
            forward_cpu[0] = 0.0
            start = time.thread_time()
            tokens = run_mode(engine, work, params, mode, lengths)["tokens"]
            total = time.thread_time() - start
            rest[mode].append(1e6 * (total - forward_cpu[0]) / tokens)
            model_us[mode].append(1e6 * forward_cpu[0] / tokens)
    print(f"{model}: {args.requests} requests x up to {args.max_tokens} tokens, {args.runs} alternating runs, "
          f"thread CPU per output token (median; all runs)")
    print("| mode | outside the forward (us) | forward (us) |\n| --- | --- | --- |")
    for mode in MODES:
        print(f"| {mode} | {statistics.median(rest[mode]):.0f} ({' '.join(f'{x:.0f}' for x in sorted(rest[mode]))}) "
              f"| {statistics.median(model_us[mode]):.0f} |")
    extra = statistics.median(rest[MODES[1]]) - statistics.median(rest[MODES[0]])
    base = statistics.median(rest[MODES[0]]) + statistics.median(model_us[MODES[0]])
    print(f"free-text overhead: {extra:.0f} us/token = {(base + extra) / base:.3f}x the unconstrained token")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
