"""Cyclic-GC pauses inside mask steps over a long-running process, by collector policy (issue 22).

One process per policy compiles the iglu-central schemas one after another (DeepSeek 129k
vocabulary, compiled-grammar cache off, state-level caches on, `GrammarCompiler.prepare` and the
start-up heap frozen as `formwork serve` does) and replays each schema's cached instances token by
token; a step is one mask fill plus the accepted token, as an engine step does for a constrained
sequence.  `gc.callbacks` time every collection (thread CPU) and say where it landed: inside a step,
inside a compile, or between steps (the policy's deferred full collections).  Policies:

- `automatic`: CPython's thresholds (what the process did before issue 22);
- `deferred`: `core.gc_policy.StepCollector` installed, never idle (sustained load: a full collection
  runs between steps only once `--max-deferred` young collections are pending);
- `frozen`: `deferred` with `freeze_survivors` (each deferred full collection freezes what survived it).

They run side by side in one invocation (a subprocess each, alternating with `--rounds`), for
each `--build NAME=DIR` given (a directory holding a `formwork` tree with its C extensions built in
place, put first on PYTHONPATH; default: the installed formwork):

    .venv/bin/python benchmarks/gc_pauses.py [--limit N] [--rounds 1] [--max-deferred 100] [--build NAME=DIR ...]

(a build named `base` runs no `frozen` policy: builds before session 16 lack it).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
POLICIES = ("automatic", "deferred", "frozen")


def run_policy(policy: str, limit: int | None, max_deferred: int, depth: int) -> dict:
    """Compile and replay the corpus in this process under `policy`; the numbers as a dict."""
    sys.path.insert(0, str(HERE))
    from gc_clock import CollectorClock
    from grammar_harness import Tokenized
    from realworld_cases import load_corpus

    from formwork.core.gc_policy import StepCollector
    from formwork.grammar import GrammarCompiler, Vocabulary, allocate_token_bitmask, compile_json_schema
    from formwork.grammar.errors import GrammarError
    from formwork.server.serve_cmd import freeze_startup_heap

    tok = Tokenized()
    vocab = Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size)
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    compiler.prepare()
    cases = load_corpus("iglu-central", limit)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    freeze_startup_heap()
    collector = StepCollector(max_deferred, freeze_survivors=True) if policy == "frozen" else StepCollector(max_deferred)
    if policy != "automatic":
        collector.install()
    log, steps, slow, compiled = CollectorClock(), [], [], 0
    started = time.thread_time()
    for case in cases:
        log.where = "compile"
        try:
            grammar = compile_json_schema(case.spec, vocab, compiler=compiler, max_nesting_depth=depth, **case.options)
        except GrammarError:
            continue
        compiled += 1
        for text in case.instances or [""]:
            matcher = grammar.matcher()
            for k, token in enumerate(tok.encode(text) + [tok.eos]):
                log.where = "step"
                start, collected = time.thread_time(), log.seconds
                matcher.fill_next_token_bitmask(bitmask)
                ok = matcher.accept_token(token)
                took = time.thread_time() - start
                steps.append(took)
                if took > 0.005:
                    slow.append((took * 1e3, (log.seconds - collected) * 1e3, case.name.split(":", 1)[1], k))
                log.where = "between"
                collector.between_steps(idle=False)
                if not ok:
                    break
    total = time.thread_time() - started
    ms = np.array(steps) * 1e3
    pauses: dict[str, list[float]] = {}
    for where, gen, took in log.pauses:
        kind = f"{where} {('gen0', 'gen1', 'full')[gen]}"
        n, total_ms, longest = pauses.get(kind, [0, 0.0, 0.0])
        pauses[kind] = [n + 1, total_ms + took * 1e3, max(longest, took * 1e3)]
    return {"policy": policy, "schemas": compiled, "steps": len(steps), "cpu_s": total,
            "step_p50_us": float(np.percentile(ms, 50) * 1e3), "step_p99_us": float(np.percentile(ms, 99) * 1e3),
            "step_max_ms": float(ms.max()), "steps_over_5ms": int((ms > 5).sum()), "pauses": pauses,
            "slowest": sorted(slow, reverse=True)[:8],
            "between_full_ms": [round(took * 1e3, 2) for where, gen, took in log.pauses if where == "between" and gen == 2],
            "tracked_objects": len(gc.get_objects()),
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def pause_cell(row: dict, kind: str) -> str:
    """`n / total ms / longest ms` of the collections whose kind starts with `kind`."""
    got = [value for name, value in row["pauses"].items() if name.startswith(kind)]
    n, total_ms = sum(v[0] for v in got), sum(v[1] for v in got)
    return f"{n} / {total_ms:,.0f} / {max((v[2] for v in got), default=0.0):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="the first N iglu-central schemas (default all)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each policy, alternating")
    parser.add_argument("--max-deferred", type=int, default=100)
    parser.add_argument("--depth", type=int, default=6, help="max_nesting_depth of open values")
    parser.add_argument("--build", action="append", default=[], help="NAME=DIR, repeatable (see the docstring)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="comma-separated, of " + ", ".join(POLICIES))
    parser.add_argument("--policy", choices=POLICIES, help="run one policy here and print its numbers as JSON")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "gc_pauses.md")
    args = parser.parse_args()
    if args.policy:
        print(json.dumps(run_policy(args.policy, args.limit, args.max_deferred, args.depth)))
        return
    rows = []
    builds = [build.split("=", 1) for build in args.build] or [("", "")]
    for _ in range(args.rounds):
        for policy in args.policies.split(","):
            for name, directory in builds:
                if policy == "frozen" and name == "base":
                    continue  # `freeze_survivors` is new in session 16
                command = [sys.executable, __file__, "--policy", policy, "--max-deferred", str(args.max_deferred),
                           "--depth", str(args.depth)] + (["--limit", str(args.limit)] if args.limit else [])
                path = filter(None, [directory, os.environ.get("PYTHONPATH")])
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
                out = subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout
                rows.append(json.loads(out.strip().splitlines()[-1]) | {"build": name})
                print(rows[-1], flush=True)
    lines = [f"# GC pauses inside mask steps, by collector policy ({rows[0]['schemas']} iglu-central schemas, "
             f"{rows[0]['steps']:,} steps)", "",
             "`.venv/bin/python benchmarks/gc_pauses.py" + (f" --limit {args.limit}" if args.limit else "")
             + f" --rounds {args.rounds} --max-deferred {args.max_deferred}"
             + "".join(f" --build {name}=..." for name, _ in builds if name) + "` (see its docstring), "
             f"load {os.getloadavg()[0]:.1f}.", "",
             "Thread CPU time. A step is one mask fill plus its accepted token.", "",
             "Collections are `count / total ms / longest ms` by where they landed.", "",
             "| policy | CPU s | step p50 µs | p99 µs | max ms | steps > 5 ms | full in steps | gen-1 in steps "
             "| gen-0 in steps | full in compiles | young in compiles | full between steps | tracked objects at end "
             "| max RSS MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {' @ '.join(filter(None, [r['policy'], r['build']]))} | {r['cpu_s']:.1f} | {r['step_p50_us']:.1f} | {r['step_p99_us']:.0f} "
                     f"| {r['step_max_ms']:.2f} | {r['steps_over_5ms']} | " + " | ".join(
                         pause_cell(r, kind) for kind in ("step full", "step gen1", "step gen0", "compile full", "compile gen",
                                                          "between full"))
                     + f" | {r['tracked_objects']:,} | {r['max_rss_mb']:.0f} |")
    lines += ["", "Steps over 5 ms (ms, of which collecting, schema, token index), slowest eight per run:", ""]
    for r in rows:
        lines.append(f"- {' @ '.join(filter(None, [r['policy'], r['build']]))}: " + "; ".join(f"{t:.1f} ({c:.1f}) {name} {k}" for t, c, name, k in r["slowest"]))
    print("\n".join(lines))
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
