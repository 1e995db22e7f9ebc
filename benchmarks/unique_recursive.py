"""Cost of `uniqueItems` in recursive schemas (unique arrays as regular islands of the CFG).

    .venv/bin/python benchmarks/unique_recursive.py      # writes benchmarks/results/unique_recursive.md

For each schema, the baseline is the same schema without the `uniqueItems: true` keywords (a
property *named* uniqueItems, as in meta-schemas, stays).  Both are compiled with a fresh,
uncached compiler, on the byte vocabulary and on the DeepSeek 129k vocabulary (per-vocabulary
tables prepared once, outside the timings); then a valid document is fed token by token, timing
`fill_next_token_bitmask` before each token.  Thread CPU time (the box is shared).  Reported per
vocabulary: compile ms and mask p50/p99/max µs, plain / unique, with the ratios; and, step by step,
the largest excess of a unique mask over the plain mask of the same step, and the unique masks over
5 ms (issue 22's target) beside the plain ones.
"""
from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from corpus import github_npm_entries, iglu_entries  # noqa: E402
from grammar_harness import Tokenized, median_p99_max  # noqa: E402
from json_spelling_search import accepted_text, property_rank  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler, allocate_token_bitmask  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.vocabulary import Vocabulary  # noqa: E402

TREE = {"type": "object", "properties": {
    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    "children": {"type": "array", "items": {"$ref": "#"}}}, "additionalProperties": False}
TREE_DOC = {"tags": ["root", "top"], "children": [
    {"tags": ["a", "b", "c"], "children": [{"tags": ["a", "b"]}, {"tags": ["x"]}]}, {"tags": ["root"]}]}
#: a schema document (valid under every meta-schema here) with unique arrays at several depths,
#: members in the meta-schemas' order (the grammar fixes one)
META_DOC = {"required": ["id", "name"], "properties": {
    "id": {"type": ["string", "integer"]}, "kind": {"enum": ["a", "b", 1, [1]]},
    "tags": {"items": {"type": "string"}, "uniqueItems": True, "type": "array"}}, "type": "object"}
#: the same for the OpenAPI 3.1 dialect, in its (2020-12 vocabularies') member order
OPENAPI_DOC = {"properties": {"tags": {"type": "array", "uniqueItems": True}}, "type": "object",
               "enum": ["a", "b", 1, [1]], "required": ["id", "name"]}
SELF = {"vendor": "com.acme", "name": "event", "format": "jsonschema", "version": "1-0-0"}


def cases() -> dict[str, tuple[Any, dict, Any]]:
    """name -> (schema, registry, valid document)."""
    iglu = {e.name: e for e in iglu_entries()}
    npm = {e.name: e for e in github_npm_entries()}
    out: dict[str, tuple[Any, dict, Any]] = {"tree node": (TREE, {}, TREE_DOC)}
    self_desc = iglu["com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0"]
    out["iglu self-desc"] = (self_desc.schema, self_desc.registry, {"self": SELF, **META_DOC})
    for name, doc in (("ajv/lib/refs/json-schema-draft-07.json", META_DOC),
                      ("ajv/lib/refs/json-schema-draft-06.json", META_DOC),
                      ("apidevtools__openapi-schemas/schemas/v3.1/dialect/base.schema.json", OPENAPI_DOC)):
        if name in npm:
            out[name] = (npm[name].schema, npm[name].registry, doc)
    return out


def plain(schema: Any) -> Any:
    """`schema` without its `uniqueItems: true` keywords."""
    if isinstance(schema, dict):
        return {k: plain(v) for k, v in schema.items() if not (k == "uniqueItems" and v is True)}
    if isinstance(schema, list):
        return [plain(v) for v in schema]
    return schema


def spelling(schema: Any, registry: dict, doc: Any, vocab: Vocabulary) -> str:
    """The spelling of `doc` that the schema's grammar accepts (it fixes the member order)."""
    grammar = compile_json_schema(schema, vocab, registry=registry or None)
    text = accepted_text(grammar, doc, property_rank(schema, *registry.values()))
    if text is None:
        raise AssertionError(f"no spelling of {json.dumps(doc)} is accepted")
    return text


def measure(schema: Any, registry: dict, tokens: list[int], vocab: Vocabulary,
            compiler: GrammarCompiler) -> tuple[float, list[float]]:
    """(compile ms, mask µs per step) of one schema over one tokenized document."""
    start = time.thread_time()
    grammar = compile_json_schema(schema, vocab, registry=registry or None, compiler=compiler)
    compile_ms = (time.thread_time() - start) * 1e3
    matcher = grammar.matcher(max_step_seconds=None)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    times = []
    for token in tokens:
        start = time.thread_time()
        matcher.fill_next_token_bitmask(bitmask)
        times.append((time.thread_time() - start) * 1e6)
        if not matcher.accept_token(token):
            raise AssertionError(f"the matcher refused token {token}")
    assert matcher.can_terminate()
    return compile_ms, times


def row(name: str, vocab_name: str, base: tuple[float, list[float]], unique: tuple[float, list[float]]) -> str:
    (pc, pt), (uc, ut) = base, unique

    p, u = median_p99_max(sorted(pt)), median_p99_max(sorted(ut))
    return (f"| {name} | {vocab_name} | {len(ut)} | {pc:.0f} / {uc:.0f} ({uc / pc:.2f}x) | {p[0]:.0f} / "
            f"{u[0]:.0f} ({u[0] / p[0]:.2f}x) | {p[1]:.0f} / {u[1]:.0f} | {p[2]:.0f} / {u[2]:.0f} |")


def excess_row(name: str, vocab_name: str, base: list[float], unique: list[float]) -> str:
    """The largest excess of a unique mask over the plain one at the same step, and the unique
    masks over 5 ms as (step, unique ms, plain ms)."""
    excess = [u - p for u, p in zip(unique, base)]
    step = max(range(len(excess)), key=excess.__getitem__)
    over = ", ".join(f"({i}, {u / 1e3:.1f}, {p / 1e3:.1f})" for i, (u, p) in enumerate(zip(unique, base)) if u > 5e3)
    return f"| {name} | {vocab_name} | {excess[step] / 1e3:.1f} (step {step}) | {over or 'none'} |"


def main() -> None:
    tok = Tokenized()
    deepseek = Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size)
    byte = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])
    vocabs = {"bytes": (byte, lambda text: list(text.encode())), "DeepSeek": (deepseek, tok.encode)}
    lines = ["# uniqueItems in recursive schemas: cost", "",
             f"Generated by `benchmarks/unique_recursive.py` on {platform.platform()}, Python "
             f"{platform.python_version()}; a fresh uncached compiler per schema; each cell is plain "
             "(without `uniqueItems: true`) / unique; thread CPU time.", "",
             "| schema | vocabulary | masks | compile ms | mask p50 µs | mask p99 µs | mask max µs |",
             "|---|---|---:|---:|---:|---:|---:|"]
    steps = ["", "Step by step: the largest excess of a unique mask over the plain mask of the same step (ms), "
             "and each unique mask over 5 ms as (step, unique ms, plain ms).", "",
             "| schema | vocabulary | largest excess | unique masks > 5 ms |", "|---|---|---:|---|"]
    for name, (schema, registry, doc) in cases().items():
        for vocab_name, (vocab, encode) in vocabs.items():
            compiler = GrammarCompiler(vocab, cache_enabled=False)
            compiler.prepare()
            tokens = encode(spelling(schema, registry, doc, vocab))
            base = measure(plain(schema), registry, tokens, vocab, compiler)
            unique = measure(schema, registry, tokens, vocab, compiler)
            lines.append(row(name, vocab_name, base, unique))
            steps.append(excess_row(name, vocab_name, base[1], unique[1]))
            print(lines[-1], steps[-1], sep="\n", flush=True)
    lines += steps
    out = ROOT / "benchmarks" / "results" / "unique_recursive.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
