"""Where a JSON Schema lowering's thread CPU goes, per pass, in fresh processes (issue 21's cold lowering).

Each round is a fresh process set up as `ttfm_cpu.py`'s (prepare(), the start-up heap frozen) that
compiles the 139 generated schemas `--passes` times in file order (pass 1 cold, later ones warm) with
these wrapped to add up their thread CPU: `lower_json_schema` (all of it), `_load` (loading, the
meta-schema check, the analysis), `Lowerer.lower_root` (the IR) and, where the tree has it, `share`
(the interned object-member cells, `grammar/shared_nodes.py`).  Before the first pass and after the
last it times a fixed piece of Python (the regex parser's `_group_ends`, a plain loop): a process-wide
slowdown (a hook, a thread, the collector) would show there.  Builds alternate (ABBA) as in ttfm_cpu:

    .venv/bin/python benchmarks/lowering_split.py --rounds 2 --build 789ebac=/tmp/old --build HEAD=
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
_SHARE_USERS = ("objects", "arrays", "unique_items", "witnesses", "unique_arrays")


def _timed(name: str, fn: Callable[..., Any], spent: dict[str, float]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += time.thread_time() - start
    return wrapper


def _probe() -> list[float]:
    """ms of a fixed piece of Python: 1,000 `_group_ends` of one pattern, 10 loops of 100k steps."""
    from formwork.grammar.regex_parser import _group_ends

    pattern = r"^(?:(?:[a-z]+)-(\d{2,3}))+(x|y|[()\]])*$" * 4

    def loop() -> None:
        total = 0
        for i in range(100_000):
            total += i & 7

    best = []
    for fn, args, times in ((_group_ends, (pattern,), 1000), (loop, (), 10)):
        runs = []
        for _ in range(5):
            start = time.thread_time()
            for _ in range(times):
                fn(*args)
            runs.append(time.thread_time() - start)
        best.append(round(min(runs) * 1e3, 1))
    return best


def child(passes: int) -> dict:
    """One round in this process: the per-pass sums (ms) of each wrapped phase."""
    import torch

    sys.path.insert(0, str(HERE))
    from grammar_harness import Case, FormworkEngine, Tokenized

    import formwork.grammar.json_schema as js
    from formwork.grammar.budget import CompileBudget
    from formwork.grammar.json_schema.automata import SHARED
    from formwork.server.serve_cmd import freeze_startup_heap

    tok = Tokenized()
    SHARED._builder.budget = CompileBudget(max_seconds=600.0).start()  # as ttfm_cpu.py
    engine = FormworkEngine(tok)
    freeze_startup_heap()
    spent: dict[str, float] = defaultdict(float)
    js.lower_json_schema = _timed("lowering", js.lower_json_schema, spent)
    js._load = _timed("load", js._load, spent)
    js.Lowerer.lower_root = _timed("lower_root", js.Lowerer.lower_root, spent)
    try:
        from formwork.grammar import shared_nodes
    except ImportError:  # a tree without interned member cells
        shared_nodes = None
    if shared_nodes is not None:
        share = _timed("share", shared_nodes.share, spent)
        for name in _SHARE_USERS:
            module = importlib.import_module(f"formwork.grammar.json_schema.{name}")
            if hasattr(module, "share"):
                module.share = share
    cases = [Case(p.stem, "json_schema", json.loads(p.read_text())["schema"], [], {})
             for p in sorted((HERE / "schemas").glob("*.json"))]
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    probe_before = _probe()
    sums = []
    for _ in range(passes):
        spent.clear()
        start = time.thread_time()
        for case in cases:
            engine.fill(engine.start(engine.compile(case)), bitmask)
        sums.append({"total": time.thread_time() - start, **spent})
    return {"probe_before": probe_before, "probe_after": _probe(),
            "passes": [{k: round(v * 1e3, 1) for k, v in s.items()} for s in sums]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--build", action="append", default=[], help="LABEL=PYTHONPATH")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.passes)))
        return
    builds = [b.split("=", 1) for b in args.build] or [["this", ""]]
    order = [builds[(r // 2 + r) % len(builds)] if len(builds) == 2 else builds[r % len(builds)]
             for r in range(args.rounds * len(builds))]
    print(f"thread CPU ms summed over the 139 schemas, pass 1 cold then warm; load "
          f"{os.getloadavg()[0]:.1f}")
    print("| build | probe before / after (group_ends, loop) | pass | total | lowering | load | lower_root | share |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, path in order:
        env = {**os.environ, "PYTHONPATH": path} if path else dict(os.environ)
        out = subprocess.run([sys.executable, __file__, "--child", "--passes", str(args.passes)],
                             env=env, capture_output=True, text=True, check=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
        probe = f"{result['probe_before']} / {result['probe_after']}"
        for number, sums in enumerate(result["passes"], 1):
            print(f"| {label} | {probe if number == 1 else ''} | {number} | {sums['total']} | "
                  f"{sums.get('lowering', '')} | {sums.get('load', '')} | {sums.get('lower_root', '')} | "
                  f"{sums.get('share', '-')} |")


if __name__ == "__main__":
    main()
