"""Where the median generated schema's cold compile spends its time, function by function, build against build.

A round is a fresh process set up as `ttfm_cpu.py`'s (prepare(), the start-up heap frozen) that compiles
the 139 generated schemas once in file order (cold) and takes a first mask of each, with cProfile (its own wall clock: the thread_time system call would dwarf small functions) on only
while the chosen schemas compile.  The schemas are the `--around` nearest the cold median of the LAST
build, read from one unprofiled round of it first.  Each build's rounds are merged, and the table lists
the functions (each time the least of its rounds) by how much more inclusive (or self) time a schema spends in them in the last build than in
the first, per profiled schema, with call counts (which the load cannot move).  Functions are named by
their file below the package root and their name, so two worktrees' functions pair up:

    .venv/bin/python benchmarks/ttfm_profile.py --rounds 2 --build 789ebac=/tmp/old --build HEAD=

cProfile's own overhead (~1 us a call) inflates call-heavy code and the box's load moves its wall-clock
times, so read its call counts first.  `--wrap MODULE:FUNCTION` (repeatable) times those functions
instead, without the profiler, in thread CPU time charged to the innermost one running, the table giving
each one's mean over the chosen schemas of its least time over the rounds.  A wrapped call costs ~4 us
(two `thread_time` system calls), half charged to it and half to its caller: wrap functions called a few
times a schema, and compare builds that call them alike:

    .venv/bin/python benchmarks/ttfm_profile.py --rounds 4 --build 789ebac=/tmp/old --build HEAD= \
        --wrap grammar.json_schema:_load --wrap grammar.json_schema.lowering:Lowerer.lower_root \
        --wrap grammar.json_schema.automata:SharedAutomata.compile
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
Key = tuple[str, str]


def _cases() -> list:
    sys.path.insert(0, str(HERE))
    from grammar_harness import Case

    return [Case(p.stem, "json_schema", json.loads(p.read_text())["schema"], [], {})
            for p in sorted((HERE / "schemas").glob("*.json"))]


def _wrap(targets: list[str], spent: dict[str, float]) -> None:
    """Time each "module:Class.function" of `targets` into `spent` (thread CPU ms, each moment charged
    to the innermost target running, as `realworld_phases.py` does), wherever the formwork modules
    bound it; a target this tree lacks is left out."""
    import importlib

    stack = [["", time.thread_time()]]  # [target, since]

    def charge(now: float) -> None:
        top = stack[-1]
        spent[top[0]] += now - top[1]
        top[1] = now

    for target in targets:
        module_name, _, path = target.partition(":")
        try:
            owner = importlib.import_module(f"formwork.{module_name}")
        except ImportError:
            continue
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent, None)
        original = getattr(owner, name, None)
        if original is None:
            continue

        def timed(*args, _fn=original, _target=target, **kwargs):
            now = time.thread_time()
            charge(now)
            stack.append([_target, now])
            try:
                return _fn(*args, **kwargs)
            finally:
                now = time.thread_time()
                charge(now)
                stack.pop()
                stack[-1][1] = now

        setattr(owner, name, timed)
        for module in list(sys.modules.values()):  # `from x import f` bindings
            if getattr(module, "__name__", "").startswith("formwork.") and getattr(module, name, None) is original:
                setattr(module, name, timed)


def child(out: Path, profiled: set[str], targets: list[str]) -> None:
    """One cold pass; per-schema thread ms, and either the merged profile of the `profiled` schemas'
    compiles or (with `targets`) each target's thread ms per schema."""
    import torch

    sys.path.insert(0, str(HERE))
    from grammar_harness import FormworkEngine, Tokenized

    from formwork.grammar.budget import CompileBudget
    from formwork.grammar.json_schema.automata import SHARED
    from formwork.server.serve_cmd import freeze_startup_heap

    tok = Tokenized()
    SHARED._builder.budget = CompileBudget(max_seconds=600.0).start()  # as ttfm_cpu.py
    engine = FormworkEngine(tok)
    freeze_startup_heap()
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    profile = cProfile.Profile()
    spent: dict[str, float] = defaultdict(float)
    _wrap(targets, spent)
    # the harness's own steps are charged to "" (outside every target)
    times, wrapped = {}, {}
    for case in _cases():
        on = case.name in profiled and not targets
        spent.clear()
        start = time.thread_time()
        if on:
            profile.enable()
        engine.fill(engine.start(engine.compile(case)), bitmask)
        if on:
            profile.disable()
        times[case.name] = (time.thread_time() - start) * 1e3
        wrapped[case.name] = {k: v * 1e3 for k, v in spent.items()}
    profile.create_stats()
    out.write_bytes(pickle.dumps({"times": times, "stats": profile.stats, "wrapped": wrapped}))


def _round(pythonpath: str, profiled: set[str], targets: list[str] = ()) -> dict:
    env = {**os.environ, "PYTHONPATH": pythonpath} if pythonpath else dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "round.pickle"
        subprocess.run([sys.executable, __file__, "--child", str(out), "--profiled", json.dumps(sorted(profiled))]
                       + [f"--wrap={t}" for t in targets], env=env, check=True)
        return pickle.loads(out.read_bytes())


def _key(func: tuple[str, int, str]) -> Key:
    """(file below the package root, function name): the same function in two worktrees."""
    filename, _, name = func
    marker = "/formwork/"
    if marker in filename:
        filename = filename[filename.rindex(marker) + len(marker):]
    elif "site-packages/" in filename:
        filename = filename[filename.index("site-packages/") + len("site-packages/"):]
    return filename, name


def merge(rounds: list[dict]) -> dict[Key, list[float]]:
    """Per function: [calls, self s, inclusive s], each time the least of the rounds' (a round the box
    preempted mid-call reads dearer, never cheaper); calls are the same in every round of a build."""
    each: dict[Key, list[list[float]]] = defaultdict(lambda: [[0.0] * len(rounds) for _ in range(3)])
    for number, got in enumerate(rounds):
        for func, (_, calls, tottime, cumtime, _) in got["stats"].items():
            row = each[_key(func)]
            for column, value in enumerate((calls, tottime, cumtime)):
                row[column][number] += value
    return {key: [max(calls), min(tottime), min(cumtime)] for key, (calls, tottime, cumtime) in each.items()}


def _print_wrapped(merged: dict[str, list[dict]], chosen: set[str], targets: list[str]) -> None:
    """Mean over the chosen schemas of each target's least thread ms over a build's rounds."""
    names = sorted(chosen)
    print("\nµs a schema, each moment charged to the innermost target (mean over the chosen of per-schema "
          "minima over the rounds; 'rest': the total less the targets' minima)")
    print(f"| build | total | rest | {' | '.join(targets)} |")
    print("|---|---:|---:|" + "---:|" * len(targets))
    for label, rounds in merged.items():
        total = np.mean([min(g["times"][n] for g in rounds) for n in names]) * 1e3
        cells = [np.mean([min(g["wrapped"][n].get(t, 0.0) for g in rounds) for n in names]) * 1e3
                 for t in targets]
        print(f"| {label} | {total:.0f} | {total - sum(cells):.0f} | " + " | ".join(f"{c:.0f}" for c in cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", default=[], metavar="LABEL=PYTHONPATH")
    parser.add_argument("--rounds", type=int, default=2, help="profiled fresh processes per build")
    parser.add_argument("--around", type=int, default=60, help="schemas nearest the last build's cold median")
    parser.add_argument("--top", type=int, default=40, help="rows of each table")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--wrap", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="instead of cProfile, time these (e.g. grammar.json_schema.lowering:Lowerer.lower_root) in "
                             "every schema's compile, each moment charged to the innermost one running")
    parser.add_argument("--profiled", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child), set(json.loads(args.profiled)), args.wrap)
        return
    builds = [b.split("=", 1) for b in args.build] or [["this", ""]]
    times = _round(builds[-1][1], set())["times"]
    order = sorted(times, key=times.get)
    middle = len(order) // 2
    chosen = set(order[max(0, middle - args.around // 2):middle + (args.around + 1) // 2])
    print(f"{len(chosen)} schemas around {builds[-1][0]}'s cold median "
          f"({np.median(list(times.values())):.3f} ms unprofiled), {args.rounds} profiled rounds a build, "
          f"load {os.getloadavg()[0]:.1f}")
    merged = {}
    for r in range(args.rounds):
        for label, path in (builds if r % 2 == 0 else builds[::-1]):
            merged.setdefault(label, []).append(_round(path, chosen, args.wrap))
    if args.wrap:
        _print_wrapped(merged, chosen, args.wrap)
        return
    tables = {label: merge(rounds) for label, rounds in merged.items()}
    for label, rounds in merged.items():
        profiled_ms = [sum(g["times"][n] for n in chosen) / len(chosen) for g in rounds]
        print(f"  {label}: profiled compile + first mask {' '.join(f'{t:.3f}' for t in profiled_ms)} ms a schema")
    first, last = builds[0][0], builds[-1][0]
    a, b = tables[first], tables[last]
    per = 1e6 / len(chosen)
    for column, title in ((2, "inclusive"), (1, "self")):
        rows = sorted(set(a) | set(b), key=lambda k: -(b.get(k, [0, 0, 0])[column] - a.get(k, [0, 0, 0])[column]))
        print(f"\n{title} µs a schema, {last} minus {first} (largest first)")
        print(f"| function | {first} calls | {last} calls | {first} µs | {last} µs | difference µs |")
        print("|---|---:|---:|---:|---:|---:|")
        for k in rows[:args.top]:
            x, y = a.get(k, [0, 0, 0]), b.get(k, [0, 0, 0])
            print(f"| {k[0]}:{k[1]} | {x[0] / len(chosen):.1f} | {y[0] / len(chosen):.1f} | "
                  f"{x[column] * per:.1f} | {y[column] * per:.1f} | {(y[column] - x[column]) * per:+.1f} |")


if __name__ == "__main__":
    main()
