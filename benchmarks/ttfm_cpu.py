"""formwork's time to first mask on the generated schemas, in the compiling thread's CPU time.

On the shared 2-core box `grammar.py`'s wall-clock TTFM swings by 2-4x from run to run, so an A/B
of two builds reads the thread's CPU time (compile + first mask, the compiled-grammar cache off,
state-level caches on, the start-up heap frozen as `formwork serve` and `grammar.py` do).  Even so
one pass's p50 moves by +-30% at load 1-2, so the comparison is made of rounds:

- a round is a fresh process (its state exactly as after `prepare()`), which compiles each of the
  139 schemas once in file order, as `grammar.py` does (COLD: a schema's own sub-automata, token
  masks and lowering memos are new to the process; what earlier schemas left is there), then
  `--warm-passes` more times round-robin (WARM: a repeat finds the schema's sub-automata, masks
  and memos made by its first compile, so it times the work no cache saves);
- each schema's time is its MINIMUM over the rounds (cold) or over all warm passes (warm), and the
  table gives p50/p99/sum over the schemas of those minima, and each round's own cold p50.

Builds are picked by PYTHONPATH (a worktree with its C extensions built in place; empty: this
environment's `formwork`); with several `--build`s the rounds alternate builds (ABBA order) and
each build's ratio to the first is printed:

    .venv/bin/python benchmarks/ttfm_cpu.py --rounds 5 --build 789ebac=/tmp/old --build HEAD=
    .venv/bin/python benchmarks/ttfm_cpu.py --rounds 5            # this environment only

`--no-freeze` leaves the start-up heap (torch, transformers, the vocabulary) to the collector, as
this script did before session 15: full collections then land inside compiles, and since every
fresh process allocates alike they tend to land on the same schemas, where the minima keep them.
`--no-gc` disables the collector after start-up: the difference to a default run is what the
collections cost (a diagnostic; a server cannot run so).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def child(args: argparse.Namespace) -> None:
    """One round in this process: a cold pass, then the warm passes; per-schema ms to `args.child`."""
    import torch

    sys.path.insert(0, str(HERE))
    from grammar_harness import Case, FormworkEngine, Tokenized

    from formwork.grammar.budget import CompileBudget
    from formwork.grammar.json_schema.automata import SHARED
    from formwork.server.serve_cmd import freeze_startup_heap

    tok = Tokenized()
    # 789ebac's format warm-up runs under the shared builder's deadline, a 10 s wall clock started
    # at import, which the slow imports above (and prepare() itself at load 10+) can pass; HEAD
    # gives the warm-up its own.  Outside the timings, so a generous one here for either tree.
    SHARED._builder.budget = CompileBudget(max_seconds=600.0).start()
    engine = FormworkEngine(tok)
    if not args.no_freeze:
        freeze_startup_heap()
    if args.no_gc:
        gc.disable()
    options = {} if args.max_nesting_depth is None else {"max_nesting_depth": args.max_nesting_depth}
    cases = [Case(p.stem, "json_schema", json.loads(p.read_text())["schema"], [], options)
             for p in sorted((HERE / "schemas").glob("*.json"))[:args.limit]]
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    passes: list[list[float]] = []
    errors = 0
    for _ in range(1 + args.warm_passes):
        times = []
        for case in cases:
            start = time.thread_time()
            try:
                engine.fill(engine.start(engine.compile(case)), bitmask)
            except Exception:  # noqa: BLE001 - a refusal is counted, not timed apart
                errors += 1
            times.append((time.thread_time() - start) * 1e3)
        passes.append(times)
    Path(args.child).write_text(json.dumps({"names": [c.name for c in cases], "cold": passes[0],
                                            "warm": passes[1:], "errors": errors // len(passes)}))


def run_round(label: str, pythonpath: str, args: argparse.Namespace) -> dict:
    """One fresh process of the build at `pythonpath`; its per-schema times."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "times.json"
        command = [sys.executable, __file__, "--child", str(out), "--warm-passes", str(args.warm_passes)]
        command += ["--no-freeze"] * args.no_freeze + ["--no-gc"] * args.no_gc
        if args.limit is not None:
            command += ["--limit", str(args.limit)]
        if args.max_nesting_depth is not None:
            command += ["--max-nesting-depth", str(args.max_nesting_depth)]
        subprocess.run(command, env=env, check=True)
        got = json.loads(out.read_text())
    print(f"  round of {label}: cold p50 {np.percentile(got['cold'], 50):.3f} ms, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    return got


def stats(minima: np.ndarray) -> tuple[float, float, float]:
    """p50, p99 and sum (ms) of per-schema minima."""
    return float(np.percentile(minima, 50)), float(np.percentile(minima, 99)), float(minima.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", default=None, metavar="LABEL=PYTHONPATH",
                        help="repeatable; PYTHONPATH empty for this environment's formwork (default: one, "
                             "labelled --label, this environment)")
    parser.add_argument("--label", default="formwork", help="the label of the default build")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per build")
    parser.add_argument("--warm-passes", type=int, default=3, help="repeat passes after each round's cold one")
    parser.add_argument("--limit", type=int, default=None, help="only the first N schemas")
    parser.add_argument("--max-nesting-depth", type=int, default=None,
                        help="formwork's max_nesting_depth (default: the compiler's own default)")
    parser.add_argument("--no-freeze", action="store_true",
                        help="leave the start-up heap to the collector (as this script did before session 15)")
    parser.add_argument("--no-gc", action="store_true",
                        help="disable the collector after start-up (a diagnostic: what collections cost)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    builds = [tuple(b.split("=", 1)) for b in args.build] if args.build else [(args.label, "")]
    rounds: dict[str, list[dict]] = {label: [] for label, _ in builds}
    for r in range(args.rounds):
        for label, pythonpath in (builds if r % 2 == 0 else builds[::-1]):
            rounds[label].append(run_round(label, pythonpath, args))
    print(f"\n{args.rounds} rounds a build, {args.warm_passes} warm passes a round, start-up heap "
          f"{'not ' if args.no_freeze else ''}frozen{', collector off' if args.no_gc else ''}; "
          "thread CPU ms of per-schema minima; "
          f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| build | schemas | errors | cold p50 | cold p99 | cold sum | warm p50 | warm p99 | warm sum "
          "| cold p50 of each round |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    first = None
    for label, _ in builds:
        got = rounds[label]
        cold = stats(np.min([g["cold"] for g in got], axis=0))
        warm = stats(np.min([w for g in got for w in g["warm"]], axis=0)) if args.warm_passes else (np.nan,) * 3
        each = " ".join(f"{np.percentile(g['cold'], 50):.3f}" for g in got)
        print(f"| {label} | {len(got[0]['names'])} | {got[0]['errors']} | {cold[0]:.3f} | {cold[1]:.2f} | "
              f"{cold[2]:.0f} | {warm[0]:.3f} | {warm[1]:.2f} | {warm[2]:.0f} | {each} |")
        if first is None:
            first = (label, cold, warm)
        else:
            ratios = " ".join(f"{a / b:.2f}x" for a, b in zip(cold + warm, first[1] + first[2]))
            print(f"|   {label} / {first[0]} | | | " + " | ".join(ratios.split()) + " | |")


if __name__ == "__main__":
    main()
