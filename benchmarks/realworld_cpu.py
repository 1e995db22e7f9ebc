"""Compile + first mask on the real-world corpora in CPU time, formwork beside llguidance.

At load 10-16 on the shared 2-core box `grammar.py`'s wall-clock compile times are scheduling: one
engine's p50 moves 5x between runs.  This loop times each schema's compile and first mask in the
process's CPU time (all threads, so an engine's own worker threads count), engines alternating schema
by schema in one process, the start-up heap frozen as `formwork serve` does, and reports p50/p99 on
the schemas every engine compiles, plus each engine's five slowest there:

    .venv/bin/python benchmarks/realworld_cpu.py [--corpus iglu-central --corpus schemastore] [--limit 40] [--gc automatic]

`--masks` also replays each schema's instances (`realworld_cases.py`) after its compile and reports
every later mask's thread CPU time (p50, p99, max and the slowest five; the masks it caches make
later schemas' first masks cheaper, so compare compile times across runs alike).  Any corpus of
`corpus.py` may be named (kubernetes, bfcl, github-npm, test-suite); with several, each one's p50
and p99 follow the table.

`--gc deferred` (the default) installs the serving process's collector policy (`core.gc_policy`);
`automatic` leaves CPython's thresholds.

Pick a formwork build with PYTHONPATH (a worktree with its C extensions built in place).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

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
    parser.add_argument("--times", type=Path, default=None,
                        help="also write each engine's per-schema times (ms) here as JSON")
    parser.add_argument("--masks", action="store_true",
                        help="also replay each schema's instances and time every later mask (thread CPU)")
    args = parser.parse_args()
    tok = Tokenized()
    engines = [FormworkEngine(tok), LLGuidanceSpaced(tok)]
    freeze_startup_heap()
    step_collector = StepCollector()
    if args.gc == "deferred":
        step_collector.install()
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    times: dict[str, dict[str, float]] = {e.name: {} for e in engines}
    masks: dict[str, dict[str, list[tuple[float, int, int]]]] = {e.name: {} for e in engines}
    for corpus in args.corpus or ["iglu-central", "schemastore"]:
        for case in load_corpus(corpus, args.limit):
            token_lists = [tok.encode(text) for text in case.instances] if args.masks else []
            for engine in engines:
                start = time.process_time()
                try:
                    compiled = engine.compile(case)
                    engine.fill(engine.start(compiled), bitmask)
                except Exception:  # noqa: BLE001 - a refusal or a failure: left out of the comparison
                    continue
                times[engine.name][case.name] = (time.process_time() - start) * 1e3
                step_collector.between_steps(idle=False)
                if token_lists:
                    masks[engine.name][case.name] = _replay(engine, compiled, token_lists, tok.eos,
                                                            bitmask, step_collector)
    common = sorted(set.intersection(*(set(t) for t in times.values())))
    print(f"{len(common)} schemas compiled by every engine; --gc {args.gc}; load {os.getloadavg()[0]:.1f}")
    print("| engine | compile + first mask CPU p50 ms | p99 ms | slowest five (ms) |")
    print("|---|---:|---:|---|")
    for name, got in times.items():
        ms = np.array([got[c] for c in common])
        slowest = sorted(common, key=got.__getitem__, reverse=True)[:5]
        print(f"| {name} | {np.percentile(ms, 50):.2f} | {np.percentile(ms, 99):.1f} | "
              + ", ".join(f"{c.split(':', 1)[1]} {got[c]:.0f}" for c in slowest) + " |")
    if args.times:
        args.times.write_text(json.dumps({name: {c: got[c] for c in common} for name, got in times.items()}))
    corpora = sorted({c.split(":", 1)[0] for c in common})
    if len(corpora) > 1:
        _by_corpus(times, common, corpora)
    if args.masks:
        _mask_table(masks, common)


def _replay(engine: Any, compiled: Any, token_lists: list[list[int]], eos: int, bitmask: torch.Tensor,
            step_collector: StepCollector) -> list[tuple[float, int, int]]:
    """Each instance's tokens then the stop token through a fresh matcher: the thread CPU time
    (µs) of every mask after the first, with (instance, token index); an instance stops at a
    token its mask refuses.  The collector's between-step work runs outside the timings."""
    out = []
    for k, tokens in enumerate(token_lists):
        matcher = engine.start(compiled)
        engine.fill(matcher, bitmask)
        for j, token in enumerate(tokens + [eos]):
            if j:
                start = time.thread_time()
                engine.fill(matcher, bitmask)
                out.append(((time.thread_time() - start) * 1e6, k, j))
                step_collector.between_steps(idle=False)
            if not (bitmask[0, token // 32] >> (token % 32)) & 1 or not engine.accept(matcher, token):
                break
    return out


def _mask_table(masks: dict[str, dict[str, list[tuple[float, int, int]]]], common: list[str]) -> None:
    """Mask p50 / p99 / max per engine over the schemas every engine compiles, and the slowest."""
    print("\n| engine | masks | mask CPU p50 µs | p99 µs | max ms | slowest five (ms, instance:token) |")
    print("|---|---:|---:|---:|---:|---|")
    for name, got in masks.items():
        every = sorted((us, case, k, j) for case in common for us, k, j in got.get(case, []))
        if not every:
            continue
        us = np.array([m[0] for m in every])
        slowest = ", ".join(f"{c.split(':', 1)[1]} {t / 1e3:.1f} ({k}:{j})" for t, c, k, j in every[::-1][:5])
        print(f"| {name} | {len(us)} | {np.percentile(us, 50):.0f} | {np.percentile(us, 99):.0f} | "
              f"{us.max() / 1e3:.2f} | {slowest} |")


def _by_corpus(times: dict[str, dict[str, float]], common: list[str], corpora: list[str]) -> None:
    """The p50 and p99 of each corpus's schemas every engine compiles, per engine."""
    names = list(times)
    print("\n| corpus | schemas | " + " | ".join(f"{n} p50 / p99 ms" for n in names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for corpus in corpora:
        cases = [c for c in common if c.split(":", 1)[0] == corpus]
        cells = [f"{np.percentile([times[n][c] for c in cases], 50):.2f} / "
                 f"{np.percentile([times[n][c] for c in cases], 99):.1f}" for n in names]
        print(f"| {corpus} | {len(cases)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
