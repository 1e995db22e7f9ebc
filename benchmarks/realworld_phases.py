"""Where a real-world schema's compile + first mask goes, phase by phase, in thread CPU time.

Each schema of the corpora is compiled once (compiled-grammar cache off, as `realworld_cpu.py`
does, after `GrammarCompiler.prepare`) and its first mask filled, with the formwork functions of
each phase wrapped by a clock that charges thread CPU time to the innermost running phase:

    .venv/bin/python benchmarks/realworld_phases.py [--corpus iglu-central --corpus schemastore] [--limit 40]
        [--around-p50 40] [--profile 30]

The phases are formwork's entry points (`instrument` lists them); "compile: other" is
`compile_cached`'s own steps, among them the young collection the serving collector policy runs
as the compile's collector pause ends (`gc_pause`).  Reported: the p50 schema's total, and for the `--around-p50` schemas nearest the p50 each phase's
mean share; `--profile N` then prints cProfile's top N functions (by own time) over a second pass of
those schemas in a fresh compiler: caches a long-running process keeps across schemas stay warm there
(shared sub-automata, masks of shared lexemes), so it shows the per-compile fixed costs.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from grammar_harness import FormworkEngine, Tokenized  # noqa: E402
from realworld_cases import load_corpus  # noqa: E402

from formwork.core.gc_policy import StepCollector  # noqa: E402
from formwork.server.serve_cmd import freeze_startup_heap  # noqa: E402


class PhaseClock:
    """Thread CPU time per phase, each moment charged to the innermost phase running."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._stack: list[str] = ["other"]
        self._since = time.thread_time()

    def _charge(self) -> None:
        now = time.thread_time()
        self.spent[self._stack[-1]] += now - self._since
        self._since = now

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._charge()
            self._stack.append(phase)
            try:
                return fn(*args, **kwargs)
            finally:
                self._charge()
                self._stack.pop()
        return timed

    def take(self) -> dict[str, float]:
        """The time spent since the last take, by phase (ms)."""
        self._charge()
        out = {k: v * 1e3 for k, v in self.spent.items()}
        self.spent.clear()
        return out


def instrument(clock: PhaseClock) -> None:
    """Wrap each phase's entry points (module attributes and methods) with `clock`."""
    import formwork.grammar.automaton as automaton
    import formwork.grammar.compiler as compiler
    import formwork.grammar.json_schema as json_schema
    import formwork.grammar.json_schema.cache as cache
    import formwork.grammar.json_schema.objects as objects
    import formwork.grammar.lazy_dfa as lazy_dfa
    import formwork.grammar.matcher as matcher
    import formwork.schemas.document as document
    from formwork.grammar.json_schema.expand import Expander
    from formwork.grammar.json_schema.lowering import Lowerer

    for module, name, phase in (
            (document, "load_source_with_depth", "load: source"),
            (document, "declared_draft", "load: draft detection"),
            (document.SchemaRegistry, "__init__", "load: registry"),
            (document, "check_meta_schema", "load: meta-schema check"),
            (document, "translate", "load: dialect translation"),
            (document.RefIndex, "__init__", "load: $ref index"),
            (document, "analyse", "load: analysis"),
            (json_schema, "_load", "load: other"),
            (json_schema, "compile_json_schema", "compile: other"),
            (json_schema, "lower_json_schema", "lowering: other"),
            (json_schema, "_open_value_in_product", "lowering: open values"),
            (cache.SHARED, "compile", "automaton: other"),
            (cache.SHARED, "compile_cfg", "automaton: other"),
            (lazy_dfa.LazyDFA, "__init__", "automaton: lazy DFA"),
            (Lowerer, "__init__", "lowering"),
            (Lowerer, "lower_root", "lowering"),
            (Expander, "expand", "$ref / applicator expansion"),
            (cache, "settle_unique_arrays", "unique arrays"),
            (objects, "canonical_content_except", "lowering: other keys"),
            (automaton.NFA, "__init__", "NFA"),
            (automaton.SubsetBuilder, "__init__", "subset construction"),
            (lazy_dfa.LazyDFA, "_expand", "subset construction"),
            (compiler.CompiledGrammar, "__init__", "compiled grammar"),
            (matcher.Matcher, "__init__", "first mask"),
            (matcher.Matcher, "fill_next_token_bitmask", "first mask")):
        setattr(module, name, clock.wrap(phase, getattr(module, name)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", default=None, help="repeatable; default iglu-central and schemastore")
    parser.add_argument("--limit", type=int, default=40, help="the first N schemas of each corpus")
    parser.add_argument("--around-p50", type=int, default=40, help="schemas nearest the p50 to break down")
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's top N functions over them")
    parser.add_argument("--names", type=Path, default=None, help="write the names of those schemas here")
    args = parser.parse_args()
    tok = Tokenized()
    engine = FormworkEngine(tok)
    cases = [c for name in args.corpus or ["iglu-central", "schemastore"] for c in load_corpus(name, args.limit)]
    freeze_startup_heap()
    step_collector = StepCollector()  # the serving process's collector policy, as realworld_cpu.py
    step_collector.install()
    clock = PhaseClock()
    instrument(clock)
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    phases: dict[str, dict[str, float]] = {}
    for case in cases:
        clock.take()
        try:
            engine.fill(engine.start(engine.compile(case)), bitmask)
        except Exception:  # noqa: BLE001 - a refusal: left out
            continue
        phases[case.name] = clock.take()
        step_collector.between_steps(idle=False)
        clock.take()
    totals = {name: sum(p.values()) for name, p in phases.items()}
    p50 = float(np.percentile(list(totals.values()), 50))
    near = sorted(totals, key=lambda n: abs(totals[n] - p50))[:args.around_p50]
    print(f"{len(phases)} schemas compiled; total (compile + first mask, thread CPU) p50 {p50:.2f} ms; "
          f"the {len(near)} nearest it, mean {np.mean([totals[n] for n in near]):.2f} ms:")
    print("| phase | mean ms | share |")
    print("|---|---:|---:|")
    keys = sorted({k for n in near for k in phases[n]}, key=lambda k: -sum(phases[n].get(k, 0) for n in near))
    whole = sum(totals[n] for n in near)
    for key in keys:
        spent = sum(phases[n].get(key, 0.0) for n in near)
        print(f"| {key} | {spent / len(near):.3f} | {spent / whole:.0%} |")
    if args.names:
        args.names.write_text("\n".join(near) + "\n")
    if args.profile:
        chosen = [c for c in cases if c.name in set(near)]
        engine = FormworkEngine(tok)
        profile = cProfile.Profile(time.thread_time)
        profile.enable()
        for case in chosen:
            engine.fill(engine.start(engine.compile(case)), bitmask)
        profile.disable()
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
