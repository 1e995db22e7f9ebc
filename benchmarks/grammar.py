"""JSON Schema benchmark: formwork vs xgrammar, llguidance and outlines-core, side by side.

Two sets of schemas, reported separately (`--corpus`, repeatable):

* `real-world` (the default): the corpora of `corpus.py` — `iglu-central` (660 Snowplow schemas),
  `schemastore` (vendored SchemaStore schemas) and `test-suite` (every JSON Schema Test Suite
  schema, five drafts) — each alone or all three; also, by name only, `kubernetes`, `bfcl` and
  `github-npm`; instances from `realworld_cases.py`. Writes
  `benchmarks/results/grammar_realworld.md`: per corpus and engine the compiled count, then compile
  and mask percentiles on the schemas every engine compiles, and the slowest masks.
* `generated`: the schemas in `benchmarks/schemas/` (made by `make_schemas.py`), written to
  `benchmarks/results/grammar.md` as below.

    .venv/bin/python benchmarks/grammar.py [--corpus iglu-central] [--limit N] [--engines formwork,llguidance]

For every schema in `benchmarks/schemas/` (made by `make_schemas.py`): time to first mask
(compile + first mask fill, each engine's compiled-grammar cache off) and the per-token mask time
while replaying each instance's tokens (DeepSeek 129k tokenizer), then the stop token.

Writes `benchmarks/results/grammar.md` (machine, versions, summary, per-schema table, targets).
State-level caches that stay on: formwork's token-mask cache (masks per automaton state, keyed by
the state's language: the IR it was built from and its NFA state set, so schemas with the same
language share masks; the 139 cases are 139 distinct schemas), its lexeme caches (the automata,
masks and exit points of string contents, numbers, formats and bounded repetitions, shared by
every schema that uses them), its shared sub-automata (DFAs of formats, patterns, numbers, the
bounded any-JSON value) and the lowered IR of leaf subschemas made of value keywords only (such as
{"type": "string", "format": "date"}, keyed by their keywords, the draft and the options); no
whole schema's lowering or automaton is kept.  Before any timing, each engine
builds its tokenizer-level tables; formwork's (`GrammarCompiler.prepare`, as the server does at
start) are the vocabulary trie, the string-character slice, the masks of JSON string contents
with each count of characters left and the automata of the supported formats, which depend on no
schema.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from grammar_harness import (  # noqa: E402
    Case, LLGuidanceEngine, Tokenized, load_engines, report, run_cases, summary_rows,
)


class LLGuidanceSpaced(LLGuidanceEngine):
    """llguidance with the separators `json.dumps` writes (", " and ": "), like the others."""

    def compile(self, case: Case):
        if case.kind != "json_schema":
            return super().compile(case)
        m = self.llg.LLMatcher
        grammar = m.grammar_from_json_schema(case.spec, defaults={
            "whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "})
        matcher = m(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher


def load_cases(limit: int | None = None) -> list[Case]:
    cases = []
    for path in sorted((HERE / "schemas").glob("*.json"))[:limit]:
        data = json.loads(path.read_text())
        # default separators (", " and ": "): every engine's default non-flexible whitespace
        cases.append(Case(path.stem, "json_schema", data["schema"],
                          [json.dumps(inst) for inst in data["instances"]]))
    return cases


def targets(results) -> list[str]:
    rows = {r["engine"]: r for r in summary_rows(results)}
    fw = rows.get("formwork")
    if fw is None:
        return []
    lines = ["", "## Targets", ""]

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.1f}x" if b else "n/a"

    llg, xgr = rows.get("llguidance"), rows.get("xgrammar")
    if llg:
        a, b = fw["ttfm_ms"]["p50"], llg["ttfm_ms"]["p50"]
        lines.append(f"- median compile (TTFM p50) <= llguidance's: {a:.2f} ms vs {b:.2f} ms "
                     f"-> {'met' if a <= b else 'missed, ' + ratio(a, b)}")
    p99 = fw["ttfm_ms"]["p99"]
    lines.append(f"- p99 compile < 500 ms: {p99:.1f} ms -> {'met' if p99 < 500 else 'missed'}")
    if xgr:
        a, b = fw["mask_us"]["p50"], xgr["mask_us"]["p50"]
        lines.append(f"- median mask <= XGrammar's: {a:.1f} µs vs {b:.1f} µs "
                     f"-> {'met' if a <= b else 'missed, ' + ratio(a, b)}")
    if llg:
        a, b = fw["mask_us"]["p99"], llg["mask_us"]["p99"]
        lines.append(f"- p99 mask <= llguidance's: {a:.1f} µs vs {b:.1f} µs "
                     f"-> {'met' if a <= b else 'missed, ' + ratio(a, b)}")
    return lines


NOTES = (
    "Schemas: `benchmarks/schemas/*.json` (real-world-style payloads, configs, events, tool calls; "
    "enums, formats, numeric ranges, patterns, nested objects and arrays, `$ref`, anyOf/oneOf), "
    "instances serialised with `json.dumps` defaults and members in schema order. TTFM = compile + "
    "first mask with compiled-grammar caches off; mask = every later fill while replaying the "
    "instance's tokens, then the stop token. formwork keeps its state-level caches across schemas, "
    "as a server would: token masks keyed by a state's language (the 139 cases are 139 distinct "
    "schemas, so a mask is shared only where two states have the same language), the lexeme caches (string contents, "
    "numbers, formats, bounded repetitions), the shared sub-automata and the lowered IR of leaf "
    "subschemas made of value keywords only (e.g. `{\"type\": \"string\", \"format\": \"date\"}`, keyed by "
    "their keywords, the draft and the options); no whole schema's lowering or automaton is kept. Tokenizer-level tables are built before timing (formwork: the trie, the "
    "string-character slice and the masks of JSON string contents per count of characters left, "
    "and the automata of the supported formats, which depend on no schema; `GrammarCompiler.prepare`, as the server does at start); xgrammar runs with max_threads=1, any_whitespace=False, "
    "strict_mode=False; llguidance with whitespace_flexible=False and separators ', ' / ': '; outlines-core with "
    "whitespace_pattern `[ ]?`.")


REAL_NOTES = (
    "Schemas: {corpora}, each as `corpus.py` loads it (Iglu `$ref`s resolve to the corpus's files "
    "through formwork's `registry`; the peers get the schema alone, so a schema with such a "
    "reference counts as compiled by every engine only if they all compile it). Instances: up to "
    "{examples} per schema from hypothesis-jsonschema, valid by `jsonschema` (`realworld_cases.py`), "
    "serialised with `json.dumps` separators, members in schema order, non-ASCII text as UTF-8 "
    "(instances with a lone surrogate left out); Iglu's self-describing `$schema` is replaced by "
    "draft-04's for every engine (the peers try to fetch it). A schema without one is compiled and its first mask "
    "filled only. Compile = compile + first mask, compiled-grammar caches off, one engine after the other "
    "on each schema; mask = every later fill while replaying the "
    "instance's tokens (DeepSeek 129k tokenizer), then the stop token, until the end or the first "
    "refused token. formwork keeps its state-level caches across schemas as a server would (see "
    "`grammar.md`); xgrammar runs with max_threads=1, any_whitespace=False, strict_mode=False; "
    "llguidance with whitespace_flexible=False and separators ', ' / ': '. Each engine runs in its own "
    "worker process; a schema with no result within {timeout:g} s (compile and replay) counts as not "
    "compiled and the worker is restarted. 'after' is the end of "
    "the text replayed before the slow mask.")


REAL_WORLD = ("iglu-central", "schemastore", "test-suite")  # `--corpus real-world`
MORE_REAL_WORLD = ("kubernetes", "bfcl", "github-npm")  # corpus.py's others, each asked by name


def _engine(name: str, tok: Tokenized):
    """The engine called `name`, llguidance with the separators the others write."""
    engine = load_engines(tok, [name])[0]
    return LLGuidanceSpaced(tok) if name == "llguidance" else engine


def run_real_world(tok: Tokenized, names: list[str], args: argparse.Namespace) -> None:
    """The real-world corpora, each reported alone, then all together; each engine in its own
    worker process (`engine_workers.py`), killed when a schema takes longer than `--timeout`."""
    from engine_workers import EngineWorker, run_isolated
    from realworld_cases import load_corpus
    from realworld_report import corpus_section, refusals

    from grammar_harness import machine_info
    wanted = [e for e in args.engines.split(",") if e] or ["formwork", "xgrammar", "llguidance"]
    workers = [EngineWorker(name, tok, lambda name=name: _engine(name, tok))
               for name in wanted if name != "outlines-core"]
    start = time.perf_counter()
    per: dict[str, list] = {}
    cases: dict = {}
    for name in names:
        mine = load_corpus(name, args.limit, examples=args.examples)
        cases.update((c.name, c) for c in mine)
        print(f"[grammar] {name}: {len(mine)} schemas", flush=True)
        per[name] = run_isolated(workers, mine, tok, args.timeout, verbose=args.verbose)
    for worker in workers:
        worker.close()
    took = time.perf_counter() - start
    lines = [f"# Grammar benchmark: real-world JSON Schemas ({sum(len(v) for v in per.values()) // max(1, len(workers))} "
             f"schemas)", "", machine_info() + f"; {took:.0f} s in all.", "",
             REAL_NOTES.format(corpora=", ".join(f"`{n}`" for n in names), examples=args.examples, timeout=args.timeout), ""]
    for name, results in per.items():
        lines += corpus_section(name, results, cases, tok)
    if len(per) > 1:
        lines += corpus_section("All real-world corpora together", [r for v in per.values() for r in v], cases, tok)
    lines += refusals([r for v in per.values() for r in v])
    text = "\n".join(lines)
    print(text)
    out = Path(args.out or HERE / "results" / "grammar_realworld.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", default=None,
                        choices=["real-world", "generated", *REAL_WORLD, *MORE_REAL_WORLD],
                        help="repeatable; default real-world (its three corpora)")
    parser.add_argument("--engines", default="", help="comma-separated subset of engines")
    parser.add_argument("--limit", type=int, default=None, help="only the first N schemas (of each corpus)")
    parser.add_argument("--examples", type=int, default=3, help="real-world instances per schema")
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="real-world: seconds a schema may take in one engine before its worker is killed")
    parser.add_argument("--verbose", action="store_true", help="a line per schema and engine")
    parser.add_argument("--outlines-every", type=int, default=6,
                        help="outlines-core (whose compiles take tens of seconds) runs on every K-th schema")
    parser.add_argument("--out", default=None, help="the report (default per set, see above)")
    args = parser.parse_args()
    chosen = args.corpus or ["real-world"]
    real = [n for n in REAL_WORLD if "real-world" in chosen or n in chosen]
    real += [n for n in MORE_REAL_WORLD if n in chosen]
    tok = Tokenized()
    if real:
        run_real_world(tok, real, args)
    if "generated" in chosen:
        engines = load_engines(tok, [e for e in args.engines.split(",") if e] or None)
        engines = [LLGuidanceSpaced(tok) if e.name == "llguidance" else e for e in engines]
        run_generated(engines, tok, args)


def run_generated(engines: list, tok: Tokenized, args: argparse.Namespace) -> None:
    """The generated schemas of `benchmarks/schemas/`, written to grammar.md."""
    cases = load_cases(args.limit)
    fast = [e for e in engines if e.name != "outlines-core"]
    slow = [e for e in engines if e.name == "outlines-core"]
    results = run_cases(fast, cases, tok)
    notes = NOTES
    if slow:
        sample = cases[::args.outlines_every]
        results += run_cases(slow, sample, tok)
        notes += (f" outlines-core ran on every {args.outlines_every}th schema ({len(sample)} of "
                  f"{len(cases)}): its regex index takes tens of seconds per schema here.")
    text = report(results, f"Grammar benchmark: {len(cases)} JSON Schemas", notes)
    text += "\n".join(targets(results)) + "\n"
    print(text)
    out = str(HERE / "results" / "grammar.md") if args.out is None or real_too(args) else args.out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")


def real_too(args: argparse.Namespace) -> bool:
    """Whether this run also writes the real-world report (then `--out` names that one)."""
    return any(c != "generated" for c in args.corpus or ["real-world"])


if __name__ == "__main__":
    main()
