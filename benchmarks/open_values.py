"""Open values (any-JSON positions) inside constrained schemas: the nesting bound's A/B.

For every iglu-central schema whose lowering has an open value (``{}``, ``true``, an untyped member,
``additionalProperties: true``), compiled once per `max_nesting_depth` given (DeepSeek 129k
vocabulary, compiled-grammar cache off, state-level caches on, after `GrammarCompiler.prepare` and
with the start-up heap frozen as the server freezes it),
each cached real-world instance (`realworld_cases.py`) is replayed token by token.  Reported per
bound, in the thread's CPU time (this box is shared: wall times are its scheduling): compile + first
mask, the masks whose matcher state lies inside an open value's automaton (the any-value positions),
the maximum over every mask, the instances accepted, and the five slowest masks with the time the
cyclic garbage collector spent inside them.  `--gc deferred` (the default) runs the collector as
`formwork serve` does (`core.gc_policy.StepCollector`: full collections between masks, never idle
here); `--gc automatic` leaves CPython's thresholds.

    .venv/bin/python benchmarks/open_values.py 2 6 [--limit N] [--gc deferred|automatic]
"""
from __future__ import annotations

import argparse
import heapq
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gc_clock import CollectorClock  # noqa: E402
from grammar_harness import Tokenized  # noqa: E402
from realworld_cases import load_corpus  # noqa: E402

from formwork.core.gc_policy import StepCollector  # noqa: E402
from formwork.grammar import GrammarCompiler, Vocabulary, allocate_token_bitmask  # noqa: E402
from formwork.grammar.dfa import DFA  # noqa: E402
from formwork.grammar.errors import GrammarError  # noqa: E402
from formwork.grammar.ir import Grammar  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED  # noqa: E402
from formwork.grammar.json_schema.lowering import _shared_any_value  # noqa: E402
from formwork.grammar.json_schema.options import JsonSchemaOptions  # noqa: E402
from formwork.server.serve_cmd import freeze_startup_heap  # noqa: E402


def open_value_prints(depths: list[int]) -> set[bytes]:
    """The content hashes (`DFA.state_key`) of the open value's automata of `depths` levels."""
    values = _shared_any_value(JsonSchemaOptions())
    return {SHARED.compile(values(d, 0)).state_key(0)[0] for d in depths}


def at_open_value(grammar, state: int, prints: set[bytes]) -> bool:
    """Whether `state` lies inside the automaton of an open value (one of `prints`)."""
    where = grammar.dfa.lexeme_state(state) if hasattr(grammar.dfa, "lexeme_state") else None
    return where is not None and isinstance(where.automaton, DFA) and where.automaton.state_key(0)[0] in prints


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("depths", type=int, nargs="+")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--gc", choices=("deferred", "automatic"), default="deferred")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "open_values.md")
    args = parser.parse_args()
    tok = Tokenized()
    vocab = Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size)
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    compiler.prepare()
    freeze_startup_heap()  # as `formwork serve` does once loaded (and `grammar_harness`): start-up objects leave the collector
    step_collector = StepCollector()
    if args.gc == "deferred":
        step_collector.install()
    cases = []
    for case in load_corpus("iglu-central", args.limit):
        try:
            if isinstance(lower_json_schema(case.spec, max_nesting_depth=None, **case.options).node, Grammar):
                cases.append(case)
        except GrammarError:
            continue
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    prints = open_value_prints(args.depths)
    rows, slowest, collector = [], [], CollectorClock()
    for depth in args.depths:
        compiles, masks, every_max, accepted, total, refused = [], [], 0.0, 0, 0, 0
        for case in cases:
            try:
                start = time.thread_time()
                grammar = compile_json_schema(case.spec, vocab, compiler=compiler, max_nesting_depth=depth,
                                              **case.options)
                grammar.matcher().fill_next_token_bitmask(bitmask)
                compiles.append(time.thread_time() - start)
            except GrammarError:
                refused += 1
                continue
            for text in case.instances:
                matcher, total, ok = grammar.matcher(), total + 1, True
                for k, token in enumerate(tok.encode(text) + [tok.eos]):
                    if k:
                        start, collected = time.thread_time(), collector.seconds
                        matcher.fill_next_token_bitmask(bitmask)
                        took = time.thread_time() - start
                        every_max = max(every_max, took)
                        heapq.heappush(slowest, (took, collector.seconds - collected, depth, case.name, k))
                        if len(slowest) > 5:
                            heapq.heappop(slowest)
                        if at_open_value(grammar, matcher._state, prints):
                            masks.append(took)
                    if not matcher.accept_token(token):
                        ok = False
                        break
                    step_collector.between_steps(idle=False)
                accepted += ok
        c, m = np.array(compiles or [0.0]) * 1e3, np.array(masks or [0.0]) * 1e6  # (0: none)
        rows.append(f"| {depth} | {len(compiles)} | {refused} | {np.percentile(c, 50):.1f} / {np.percentile(c, 99):.0f} "
                    f"| {len(masks)} | {np.percentile(m, 50):.1f} | {np.percentile(m, 90):.0f} | {np.percentile(m, 99):.0f} "
                    f"| {m.max():,.0f} | {every_max * 1e6:,.0f} | {accepted}/{total} |")
    lines = [f"# Open values: masks at any-value positions by nesting bound ({len(cases)} iglu-central schemas)", "",
             "`.venv/bin/python benchmarks/open_values.py " + " ".join(map(str, args.depths)) + f" --gc {args.gc}` "
             "(see its docstring).", "",
             "Thread CPU time.", "",
             "| max_nesting_depth | compiled | refused | compile + first mask ms p50 / p99 | masks at open values "
             "| p50 µs | p90 | p99 | max | max of every mask µs | instances accepted |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|", *rows, "",
             "Slowest masks (µs, of which the cyclic garbage collector's, bound, schema, token index):", "",
             *(f"- {took * 1e6:,.0f} ({collected * 1e6:,.0f} collecting), {depth}, {name}, {k}"
               for took, collected, depth, name, k in sorted(slowest, reverse=True))]
    print("\n".join(lines))
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
