"""Real schemas once refused at the NFA/DFA-state budgets (issue 21): compile each under the
default budget in a fresh process and print its outcome, thread CPU and the largest NFA built.

    .venv/bin/python benchmarks/budget_refusals.py                 # the default list
    .venv/bin/python benchmarks/budget_refusals.py gitlab-ci.json  # names ending like these

Schemas come from the vendored corpora (`corpus.py`); a fresh process per schema, since shared
marks and the shared automata builder are process-wide.  Run it on two commits for an A/B.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["ng-new/schema.json", "v1.2/operationObject.json", "bitbucket-pipelines.json",
           "dependabot.json", "gitlab-ci.json", "buildkite.json"]


def measure(name: str) -> dict:
    """Compile the corpus schema whose name ends with `name` (in this process)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import corpus
    from formwork.grammar import nfa

    sizes: list[int] = []
    build = nfa.NFA.__init__

    def counted(self, *args, **kwargs):  # every NFA the compile builds, its own states
        build(self, *args, **kwargs)
        sizes.append(self.num_states)

    nfa.NFA.__init__ = counted
    entries = corpus.schemastore_entries() + corpus.github_npm_entries()
    entry = next(e for e in entries if e.name.endswith(name))
    start = time.thread_time()
    try:
        corpus._compile(entry)
        outcome = "compiled"
    except ValueError as exc:  # a typed refusal
        outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
    return {"schema": name, "outcome": outcome, "cpu_s": time.thread_time() - start,
            "largest_nfa": max(sizes, default=0), "nfa_builds": len(sizes)}


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure(sys.argv[2])))
        return
    print("| schema | outcome | compile CPU s | largest NFA (own states) | NFAs built |")
    print("|---|---|---:|---:|---:|")
    for name in sys.argv[1:] or DEFAULT:
        out = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True)
        if out.returncode:
            print(f"| {name} | crash: {out.stderr.strip().splitlines()[-1][:70]} | | | |")
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"| {row['schema']} | {row['outcome']} | {row['cpu_s']:.2f} | {row['largest_nfa']:,} | "
              f"{row['nfa_builds']} |", flush=True)


if __name__ == "__main__":
    main()
