"""Recursive corpus schemas as the body of a tagged region (issue 21): compile each under the
default budget in a fresh process and print its outcome, thread CPU and the largest NFA built.

A recursive body keeps its own rules, renamed under the region's prefix (`tags.language`); the
others are inlined.  Only schemas whose lowering is recursive are listed (SchemaStore and
github-npm, those that lower).  Run it on two commits for an A/B (shared marks are process-wide).

    .venv/bin/python benchmarks/tags_schema_regions.py               # every recursive schema
    .venv/bin/python benchmarks/tags_schema_regions.py gitlab-ci.json  # names ending like these
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
import nfa_census  # noqa: E402


def _entries() -> list:
    sys.path.insert(0, str(ROOT))
    import corpus
    return corpus.schemastore_entries() + corpus.github_npm_entries()


def _lowered(entry):
    from formwork.grammar.json_schema import lower_json_schema
    from formwork.grammar.json_schema.unique_arrays import embedded_node
    lowered = lower_json_schema(entry.schema, registry=entry.registry or None, draft=entry.draft)
    return embedded_node(lowered, "inside a tagged region")


def recursive_names() -> list[str]:
    """Names of the corpus schemas that lower to a recursive grammar (refusals left out)."""
    from formwork.grammar.cfg import is_recursive
    from formwork.grammar.ir import Grammar
    names = []
    for entry in _entries():
        try:
            body = _lowered(entry)
        except ValueError:  # a typed refusal of the schema itself
            continue
        if isinstance(body, Grammar) and is_recursive(body):
            names.append(entry.name)
    return names


def measure(name: str) -> dict:
    """Compile the region whose body is the corpus schema `name` (in this process)."""
    from formwork.grammar.budget import CompileBudget
    from formwork.grammar.compiler import GrammarCompiler
    from formwork.grammar.tags import Lowered, Region, compile_lowered, tags_language
    sys.path.insert(0, str(ROOT.parent / "tests"))
    from conftest_grammar_json import byte_vocab

    entry = next(e for e in _entries() if e.name == name)

    def compile_region() -> None:
        language = tags_language([Region("<f>", "<f>", _lowered(entry), "</f>")], ["<f>"])
        compiler = GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())
        compile_lowered(("tags_schema_regions", name), lambda: Lowered(language), byte_vocab(), compiler)

    return nfa_census.measure(name, compile_region)


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure(sys.argv[2])))
        return
    names = [n for n in recursive_names() if not sys.argv[1:] or any(n.endswith(s) for s in sys.argv[1:])]
    nfa_census.print_table(__file__, names)


if __name__ == "__main__":
    main()
