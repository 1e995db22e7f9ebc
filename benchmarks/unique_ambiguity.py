"""The uniqueItems ambiguity check on real schemas: the whole tagged automaton vs the lexeme-jumping search.

    .venv/bin/python benchmarks/unique_ambiguity.py     # writes benchmarks/results/unique_ambiguity.md

For each SchemaStore schema (benchmarks/corpora/schemastore) whose lowering tags unique arrays in a
regular document, the tagged automaton is compiled once; then, each on a fresh twin of it (same NFA, no
rows yet), under the default budget: the search of `formwork.grammar.unique_ambiguity` (lexeme
automata cold: its first use in the process) and the old check, the full subset construction
(`expand_all`), stopped at the budget.  Reported: DFA states built and thread CPU ms of each, their
verdicts, and the whole `compile_json_schema` CPU ms (fresh compiler, byte vocabulary).
"""
from __future__ import annotations

import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.dfa import DEAD  # noqa: E402
from formwork.grammar.errors import GrammarBudgetError  # noqa: E402
from formwork.grammar.ir import Grammar  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED  # noqa: E402
from formwork.grammar.json_schema.unique_arrays import misplaced  # noqa: E402
from formwork.grammar.unique_ambiguity import search  # noqa: E402
from formwork.grammar.unique_scan import TAG  # noqa: E402

CORPUS = ROOT / "benchmarks" / "corpora" / "schemastore"
OUT = ROOT / "benchmarks" / "results" / "unique_ambiguity.md"


def whole(dfa, budget) -> bool:
    """The old check: every reachable state built, then one look at the TAG and '[' columns."""
    dfa.expand_all(budget)
    class_of_byte, rows = dfa.byte_classes()
    return bool(np.any((rows[:, class_of_byte[TAG]] != DEAD) & (rows[:, class_of_byte[0x5B]] != DEAD)))


def timed(check, dfa, budget) -> tuple[str, int, float]:
    start = time.thread_time()
    try:
        verdict = "ambiguous" if check(dfa, budget) else "clear"
    except GrammarBudgetError:
        verdict = "over budget"
    return verdict, dfa.num_states, (time.thread_time() - start) * 1e3


def main() -> None:
    rows = []
    for path in sorted(CORPUS.glob("*.json")):
        schema = json.loads(path.read_text())
        try:
            lowered = lower_json_schema(schema)
        except Exception:  # refused before the check: not this benchmark's subject
            continue
        if not lowered.unique_arrays or isinstance(lowered.node, Grammar) or misplaced(lowered.node):
            continue
        tagged = SHARED.compile(lowered.node, CompileBudget().start(), keep=False)
        new = timed(search, tagged.twin(CompileBudget().start()), CompileBudget().start())
        old = timed(whole, tagged.twin(CompileBudget().start()), CompileBudget().start())
        start = time.thread_time()
        try:
            compile_json_schema(schema, byte_vocab())
            compiled = f"{(time.thread_time() - start) * 1e3:.0f}"
        except Exception as exc:
            compiled = type(exc).__name__
        rows.append((path.name, *old, *new, compiled))
        print(rows[-1], flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    lines = ["# uniqueItems ambiguity check: whole automaton vs lexeme-jumping search", "",
             f"`.venv/bin/python benchmarks/unique_ambiguity.py` on {commit} (working tree), "
             f"{platform.machine()}, Python {platform.python_version()}; default budget "
             f"({CompileBudget().max_dfa_states} DFA states); CPU = thread time.", "",
             "| schema | whole: verdict | states | CPU ms | search: verdict | states | CPU ms "
             "| compile CPU ms |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    for name, ov, os_, oms, nv, ns, nms, compiled in rows:
        lines.append(f"| {name} | {ov} | {os_:,} | {oms:.0f} | {nv} | {ns:,} | {nms:.0f} | {compiled} |")
    OUT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
