"""Compile one schema per fresh process and report its outcome, thread CPU and the NFAs it built:
the common part of `budget_refusals.py` and `tags_schema_regions.py` (shared marks and the shared
automata builder are process-wide, so each schema gets its own process)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable


def measure(name: str, compile_one: Callable[[], object]) -> dict:
    """Run `compile_one` (in this process), counting every NFA built and its own states."""
    from formwork.grammar import nfa

    sizes: list[int] = []
    build = nfa.NFA.__init__

    def counted(self, *args, **kwargs):
        build(self, *args, **kwargs)
        sizes.append(self.num_states)

    nfa.NFA.__init__ = counted
    start = time.thread_time()
    try:
        compile_one()
        outcome = "compiled"
    except ValueError as exc:  # a typed refusal
        outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
    finally:
        nfa.NFA.__init__ = build
    return {"schema": name, "outcome": outcome, "cpu_s": time.thread_time() - start,
            "largest_nfa": max(sizes, default=0), "nfa_builds": len(sizes)}


def print_table(script: str, names: list[str]) -> None:
    """Run `script --one NAME` for each name in a fresh process and print the rows as they come."""
    print("| schema | outcome | compile CPU s | largest NFA (own states) | NFAs built |")
    print("|---|---|---:|---:|---:|")
    for name in names:
        out = subprocess.run([sys.executable, script, "--one", name], capture_output=True, text=True)
        if out.returncode:
            print(f"| {name} | crash: {out.stderr.strip().splitlines()[-1][:70]} | | | |", flush=True)
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {row['schema']} | {row['outcome']} | {row['cpu_s']:.2f} | {row['largest_nfa']:,} | "
              f"{row['nfa_builds']} |", flush=True)
