"""Compile + first mask on the real-world corpora in CPU time, formwork beside llguidance.

At load 10-16 on the shared 2-core box `grammar.py`'s wall-clock compile times are scheduling: one
engine's p50 moves 5x between runs.  This loop times each schema's compile and first mask in the
process's CPU time (all threads, so an engine's own worker threads count), engines alternating schema
by schema in one process, the start-up heap frozen as `formwork serve` does, and reports p50/p99 on
the schemas every engine compiles, plus each engine's five slowest there:

    .venv/bin/python benchmarks/realworld_cpu.py [--corpus iglu-central --corpus schemastore] [--limit 40] [--gc automatic]

`--gc deferred` (the default) installs the serving process's collector policy (`core.gc_policy`);
`automatic` leaves CPython's thresholds.

Pick a formwork build with PYTHONPATH (a worktree with its C extensions built in place).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from grammar import LLGuidanceSpaced  # noqa: E402
from grammar_harness import FormworkEngine, Tokenized  # noqa: E402
from realworld_cases import load_corpus  # noqa: E402

from formwork.core.gc_policy import StepCollector  # noqa: E402
from formwork.server.serve_cmd import freeze_startup_heap  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", default=None, help="repeatable; default iglu-central and schemastore")
    parser.add_argument("--limit", type=int, default=40, help="the first N schemas of each corpus")
    parser.add_argument("--gc", choices=("deferred", "automatic"), default="deferred")
    args = parser.parse_args()
    tok = Tokenized()
    engines = [FormworkEngine(tok), LLGuidanceSpaced(tok)]
    freeze_startup_heap()
    step_collector = StepCollector()
    if args.gc == "deferred":
        step_collector.install()
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    times: dict[str, dict[str, float]] = {e.name: {} for e in engines}
    for corpus in args.corpus or ["iglu-central", "schemastore"]:
        for case in load_corpus(corpus, args.limit):
            for engine in engines:
                start = time.process_time()
                try:
                    engine.fill(engine.start(engine.compile(case)), bitmask)
                except Exception:  # noqa: BLE001 - a refusal or a failure: left out of the comparison
                    continue
                times[engine.name][case.name] = (time.process_time() - start) * 1e3
                step_collector.between_steps(idle=False)
    common = sorted(set.intersection(*(set(t) for t in times.values())))
    print(f"{len(common)} schemas compiled by every engine; --gc {args.gc}; load {os.getloadavg()[0]:.1f}")
    print("| engine | compile + first mask CPU p50 ms | p99 ms | slowest five (ms) |")
    print("|---|---:|---:|---|")
    for name, got in times.items():
        ms = np.array([got[c] for c in common])
        slowest = sorted(common, key=got.__getitem__, reverse=True)[:5]
        print(f"| {name} | {np.percentile(ms, 50):.2f} | {np.percentile(ms, 99):.1f} | "
              + ", ".join(f"{c.split(':', 1)[1]} {got[c]:.0f}" for c in slowest) + " |")


if __name__ == "__main__":
    main()
