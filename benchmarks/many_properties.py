"""Objects with many optional properties, large enums and long anyOf lists: compile and mask tails.

    .venv/bin/python benchmarks/many_properties.py                 # formwork and llguidance
    .venv/bin/python benchmarks/many_properties.py --engines formwork --sizes 20,40

Generated objects with 20/40/80/160 optional properties (plain; minProperties 3; maxProperties 8
with two required; additionalProperties false with a patternProperties; dependentRequired),
Iglu Central's com.adjust/install 1-0-0 (91 optional properties and minProperties), and a
property whose value is one of 300 or 1000 strings (`enum`, `anyOf` of `const`s).  Each case is
compiled (compile-grammar cache off) and two instances replayed token by token with the DeepSeek
tokenizer, timing every mask, side by side in one run (`grammar_harness`).  formwork's compile
time alone (thread CPU, no first mask) and its document NFA's size are listed too: both should
grow about linearly with the properties.  Writes `benchmarks/results/many_properties.md`.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from grammar_harness import Case, Tokenized, load_engines, percentiles, report, run_cases  # noqa: E402

ADJUST = Path("/work/shared/data/iglu-central/schemas/com.adjust/install/jsonschema/1-0-0")
VALUE = {"type": ["string", "null"], "maxLength": 256}
VARIANTS: dict[str, dict[str, Any]] = {
    "optional": {},
    "minProperties 3": {"minProperties": 3},
    "maxProperties 8, 2 required": {"maxProperties": 8, "required": ["field_0", "field_1"]},
    "additionalProperties false + patternProperties": {
        "additionalProperties": False, "patternProperties": {"^x_": {"type": "integer"}}},
    "dependentRequired": {"dependentRequired": {"field_0": ["field_2"], "field_3": ["field_1"]}},
}


def compact(value: Any) -> str:
    """An instance without spaces (llguidance's JSON without flexible whitespace takes no other)."""
    return json.dumps(value, separators=(",", ":"))


def object_case(n: int, variant: str) -> Case:
    names = [f"field_{i}" for i in range(n)]
    schema = {"type": "object", "properties": {k: VALUE for k in names}, **VARIANTS[variant]}
    full = {k: f"v{i}" for i, k in enumerate(names)}
    sparse = {k: (None if i % 2 else "abc") for i, k in enumerate(names) if i % 3 == 0 or i < 3}
    if variant.startswith("maxProperties"):
        full = dict(list(full.items())[:8])
        sparse = dict(list(sparse.items())[:2])
    return Case(f"{n} properties, {variant}", "json_schema", schema,
                [compact(full), compact(sparse)])


def choice_case(n: int, form: str) -> Case:
    words = [f"option-{i:04d}-{'abcdefgh'[i % 8]}" for i in range(n)]
    value: dict[str, Any] = {"enum": words} if form == "enum" else {"anyOf": [{"const": w} for w in words]}
    schema = {"type": "object", "properties": {"kind": value, "note": {"type": "string"}},
              "required": ["kind"]}
    return Case(f"{form} of {n} strings", "json_schema", schema,
                [compact({"kind": words[-1], "note": "x"}), compact({"kind": words[n // 2]})])


def adjust_case() -> Case:
    schema = json.loads(ADJUST.read_text())
    schema["$schema"] = "http://json-schema.org/draft-04/schema#"  # Iglu's meta-schema: draft-04
    props = list(schema["properties"])
    instance = {k: ("abc" if i % 2 else None) for i, k in enumerate(props) if i % 4 == 0}
    instance["app_id"] = "com.example"
    ordered = {k: instance[k] for k in props if k in instance}
    return Case("Iglu com.adjust/install 1-0-0 (91 optional properties)", "json_schema", schema,
                [compact(ordered)])


def mask_cpu_us(grammar: Any, texts: list[str], tok: Tokenized) -> list[float]:
    """The thread CPU time of each mask while replaying `texts` (on a shared, loaded machine the
    wall time of a sub-millisecond mask is mostly waiting for a core)."""
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    out = []
    for text in texts:
        matcher = grammar.matcher()
        for token in tok.encode(text):
            start = time.thread_time()
            matcher.fill_next_token_bitmask(bitmask, 0)
            out.append((time.thread_time() - start) * 1e6)
            if not matcher.accept_token(token):
                break
    return out


def formwork_sizes(cases: list[Case], tok: Tokenized) -> list[str]:
    """formwork's compile alone (thread CPU ms; one compiler, its compiled-grammar cache off, as
    in `grammar_harness`), its document NFA's states and its masks' thread CPU time."""
    from formwork.grammar import GrammarCompiler, GrammarError, Vocabulary, compile_json_schema

    vocab = Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size)
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    compiler.prepare()  # the per-vocabulary tables, as the server builds them at start
    lines = ["| case | compile ms (CPU) | NFA states | mask CPU p50 µs | p99 | max |",
             "|---|---:|---:|---:|---:|---:|"]
    for case in cases:
        start = time.thread_time()
        try:
            grammar = compile_json_schema(case.spec, vocab, compiler=compiler)
        except GrammarError as exc:
            lines.append(f"| {case.name} | refused: {str(exc)[:80]} | - | - | - | - |")
            continue
        took = (time.thread_time() - start) * 1e3
        nfa = getattr(grammar.dfa, "nfa", None)
        masks = percentiles(mask_cpu_us(grammar, case.instances, tok))
        lines.append(f"| {case.name} | {took:.1f} | {nfa.num_states if nfa is not None else '-'} | "
                     f"{masks['p50']:.0f} | {masks['p99']:.0f} | {masks['max']:.0f} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engines", default="formwork,llguidance")
    p.add_argument("--sizes", default="20,40,80,160")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "many_properties.md")
    args = p.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",")]
    cases = [object_case(n, v) for v in VARIANTS for n in sizes]
    cases += [choice_case(n, form) for form in ("enum", "anyOf") for n in (300, 1000)]
    if ADJUST.exists():
        cases.append(adjust_case())
    tok = Tokenized()
    engines = load_engines(tok, args.engines.split(","))
    results = run_cases(engines, cases, tok, verbose=False)
    notes = ("Compile-grammar caches off; each engine's token-level tables built before timing. "
             "TTFM = compile + first mask.")
    text = report(results, "Many optional properties, large enums, long anyOf lists", notes)
    if any(e.name == "formwork" for e in engines):
        text += "\n## formwork: compile alone, automaton size, masks' CPU time\n\n" + "\n".join(formwork_sizes(cases, tok)) + "\n"
        worst = max((r for r in results if r.engine == "formwork" and r.mask_us),
                    key=lambda r: max(r.mask_us), default=None)
        if worst is not None:
            text += (f"\nformwork's slowest mask by wall time: {percentiles(worst.mask_us)['max']:.0f} µs "
                     f"({worst.case}); see the CPU times above for what the mask itself cost.\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
