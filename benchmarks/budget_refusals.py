"""Real schemas once refused at the NFA/DFA-state budgets (issue 21): compile each under the
default budget in a fresh process and print its outcome, thread CPU and the largest NFA built.

    .venv/bin/python benchmarks/budget_refusals.py                 # the default list
    .venv/bin/python benchmarks/budget_refusals.py gitlab-ci.json  # names ending like these

Schemas come from the vendored corpora (`corpus.py`); a fresh process per schema, since shared
marks and the shared automata builder are process-wide.  Run it on two commits for an A/B.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nfa_census  # noqa: E402

DEFAULT = ["ng-new/schema.json", "v1.2/operationObject.json", "bitbucket-pipelines.json",
           "dependabot.json", "gitlab-ci.json", "buildkite.json"]


def measure(name: str) -> dict:
    """Compile the corpus schema whose name ends with `name` (in this process)."""
    import corpus

    entries = corpus.schemastore_entries() + corpus.github_npm_entries()
    entry = next(e for e in entries if e.name.endswith(name))
    return nfa_census.measure(name, lambda: corpus._compile(entry))


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure(sys.argv[2])))
        return
    nfa_census.print_table(__file__, sys.argv[1:] or DEFAULT)


if __name__ == "__main__":
    main()
