"""Compile isolation: a trivial schema's time to first token alone and beside a compile that runs to
its budget, and how long real-world and generated schemas of the worst shape take against their budget.

    .venv/bin/python benchmarks/compile_isolation.py [--budget 2.0] [--repeats 3] [--write]

TTFT: an `LLMEngine` on the tests' tiny Llama, driven from this thread; the trivial request
(`{"type": "object", "properties": {"ok": {"type": "boolean"}}}`) is added alone, then right after a
request whose schema (long bounded patterns and pattern intersections) needs far more than `--budget` s of compile;
median of `--repeats` (compiled-grammar caches cleared between runs, and each run's patterns start apart:
the process-wide automaton builder keeps what a refused compile built, which would make later runs'
compiles short). Compile: Grafana Loki's
configuration schema (tests/data/real_schemas) and a generated schema of its shape (shared `$ref`s into
large `anyOf`s) under several budgets, outcome and the compile thread's CPU and wall seconds, under the
serving process's collector policy (`StepCollector`: full collections run between steps, here before each
compile; left automatic, a full collection of the TTFT runs' ~550k objects, ~0.3 s, landed inside a compile).
`--write` stores the tables in benchmarks/results/compile_isolation.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
from machine import cpu_name  # noqa: E402
from test_compile_budget import LOKI, shared_refs_schema  # noqa: E402
from test_server_compile_isolation import TRIVIAL, budget_bound_schema  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.gc_policy import StepCollector  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.grammar import CompileBudget, GrammarBudgetError, GrammarCompiler, Vocabulary  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.cache import _CACHES  # noqa: E402


def _params(schema: dict) -> SamplingParams:
    return SamplingParams(structured_outputs={"json": schema}, temperature=0.0, max_tokens=4)


def heavy_schema(mark: int) -> dict:
    """`budget_bound_schema` with each pattern starting with `mark` after its `^`: new languages of
    the same shape, whose automata no earlier compile in this process built."""
    schema = budget_bound_schema()
    for prop in schema["properties"].values():
        for holder in [prop, *prop.get("allOf", ())]:
            if "pattern" in holder:
                holder["pattern"] = f"^z{mark}" + holder["pattern"][1:]
    return schema


def time_to_first_token(engine: LLMEngine, beside_heavy: bool, run: int) -> float:
    """Seconds from adding the trivial request to its first generated token."""
    _CACHES.clear()
    engine.structured_output.backend.compiler.clear_cache()
    if beside_heavy:
        engine.add_request(f"heavy{run}", "Answer:", _params(heavy_schema(run)))
    start = time.perf_counter()
    engine.add_request(f"trivial{run}", "Answer:", _params(TRIVIAL))
    first = None
    while engine.has_unfinished_requests():
        for output in engine.step():
            if first is None and output.request_id == f"trivial{run}" and output.outputs[0].token_ids:
                first = time.perf_counter() - start
    assert first is not None, "the trivial request produced no token"
    return first


def ttft_rows(budget: float, repeats: int) -> list[list[str]]:
    from tiny_models import tiny_model_dir

    engine = LLMEngine(tiny_model_dir("llama"), block_size=8, grammar_compile_budget_s=budget)
    engine.structured_output.backend  # noqa: B018 - vocabulary and shared tables built before timing
    time_to_first_token(engine, False, -1)  # warm-up
    rows = []
    for beside in (False, True):
        times = [time_to_first_token(engine, beside, i + (100 if beside else 0)) for i in range(repeats)]
        label = f"beside a budget-bound compile ({budget:g} s budget)" if beside else "alone"
        rows.append([label, f"{statistics.median(times) * 1000:.0f}", f"{max(times) * 1000:.0f}"])
    return rows


def compile_rows(budgets: list[float]) -> list[list[str]]:
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])
    schemas = {"Loki (SchemaStore)": lambda _: json.loads(LOKI.read_text()),
               "generated, shared $refs into anyOfs (depth 16)": lambda _: shared_refs_schema(16, 12),
               "bounded patterns and pattern intersections": lambda k: heavy_schema(1000 + k)}
    rows = []
    collector = StepCollector()
    collector.install()
    for name, make in schemas.items():
        for k, budget in enumerate(budgets):
            schema = make(k)
            collector.between_steps(idle=True)
            compiler = GrammarCompiler(vocab, cache_enabled=False, budget=CompileBudget(max_seconds=budget))
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                compile_json_schema(schema, vocab, compiler=compiler)
                outcome = "compiled"
            except GrammarBudgetError as exc:
                outcome = "refused: " + ("time budget" if "time budget" in str(exc) else str(exc)[:60])
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            rows.append([name, f"{budget:g}", outcome, f"{cpu:.3f}", f"{wall:.3f}", f"{cpu / budget:.2f}x"])
    collector.uninstall()
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=2.0, help="compile budget of the TTFT runs (s)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    ttft = table(["trivial schema's request", "TTFT p50 (ms)", "TTFT max (ms)"], ttft_rows(args.budget, args.repeats))
    print(ttft, flush=True)
    compiles = table(["schema", "budget (s)", "outcome", "CPU (s)", "wall (s)", "CPU / budget"],
                     compile_rows([0.25, 1.0, 10.0]))
    print(compiles)
    if args.write:
        text = (f"# Compile isolation\n\n`.venv/bin/python benchmarks/compile_isolation.py --budget {args.budget:g} "
                f"--repeats {args.repeats} --write` on {cpu_name()} ({os.cpu_count()} cores, load average "
                f"{os.getloadavg()[0]:.1f} at the end), Python {platform.python_version()}, "
                f"{time.strftime('%Y-%m-%d')}.\n\n## Time to first token\n\n{ttft}\n\n## Compile time against the "
                f"budget\n\nBudgets count the compile thread's CPU time; wall time is what a loaded machine "
                f"added.\n\n{compiles}\n")
        out = REPO / "benchmarks" / "results" / "compile_isolation.md"
        out.write_text(text)
        print(f"wrote {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
