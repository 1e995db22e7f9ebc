"""formwork's time to first mask on the generated schemas, in the compiling thread's CPU time.

On the shared 2-core box at load 10-15, `grammar.py`'s wall-clock TTFM swings by 2-4x from run to
run (p50 2.6-11.9 ms for one build), so an A/B of two builds reads the thread's CPU time, which
load inflates far less.  Each schema is compiled once, then its first mask is filled (compile +
first mask, the compiled-grammar cache off, state-level caches on, as in `grammar.py`).  Pick the
build with PYTHONPATH and alternate builds run by run:

    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/ttfm_cpu.py --label 789ebac
    .venv/bin/python benchmarks/ttfm_cpu.py --label HEAD

Prints one line: schemas, errors, thread-CPU p50/p99/sum and wall p50/p99 (ms), the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from grammar_harness import Case, FormworkEngine, Tokenized  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", default="formwork", help="the build's name in the output line")
    parser.add_argument("--limit", type=int, default=None, help="only the first N schemas")
    parser.add_argument("--max-nesting-depth", type=int, default=None,
                        help="formwork's max_nesting_depth (default: the compiler's own default)")
    args = parser.parse_args()
    tok = Tokenized()
    engine = FormworkEngine(tok)
    options = {} if args.max_nesting_depth is None else {"max_nesting_depth": args.max_nesting_depth}
    cases = [Case(p.stem, "json_schema", json.loads(p.read_text())["schema"], [], options)
             for p in sorted((HERE / "schemas").glob("*.json"))[:args.limit]]
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    cpu, wall, errors = [], [], 0
    for case in cases:
        c0, t0 = time.thread_time(), time.perf_counter()
        try:
            engine.fill(engine.start(engine.compile(case)), bitmask)
        except Exception:  # a refusal is counted, not timed apart
            errors += 1
        cpu.append((time.thread_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
    c, w = np.asarray(cpu), np.asarray(wall)
    print(f"{args.label}: {len(cases)} schemas, {errors} errors; TTFM thread CPU p50 {np.percentile(c, 50):.3f} "
          f"p99 {np.percentile(c, 99):.2f} sum {c.sum():.0f} ms; wall p50 {np.percentile(w, 50):.3f} "
          f"p99 {np.percentile(w, 99):.2f} ms; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
