"""uniqueItems where branches disagree: compile and mask cost on real schemas (issue 21).

    .venv/bin/python benchmarks/unique_readings.py [--out PATH]   # default benchmarks/results/unique_readings.md

Per schema with unique arrays (SchemaStore, webpack's options): the whole `compile_json_schema`
(fresh compiler, byte vocabulary, thread CPU), then one matcher fed a valid document (spelled in
the grammar's member order) byte by byte, its token mask filled before each byte (thread CPU per
mask: p50, max, sum).  The documents put
items in the unique arrays, and where a `[` may open a unique array or another one, in both.
Run it with PYTHONPATH pointing at another checkout (named `formwork`) for an A/B on one box.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_spelling_search import accepted_text, property_rank  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler, allocate_token_bitmask  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

STORE = ROOT / "benchmarks" / "corpora" / "schemastore"
NPM = ROOT / "benchmarks" / "corpora" / "github-npm"
CASES = [  # (schema file, a valid document)
    (STORE / "travis.json", {"language": "python", "import": ["a.yml", "b.yml"], "notifications": {
        "pushover": [{"api_key": "k"}, {"api_key": "j"}], "email": {"recipients": ["a@b.c", "d@e.f"]}}}),
    (STORE / "gitlab-ci.json", {".tpl": {"retry": {"exit_codes": [1, 1]}},
                                "build": {"script": "make", "retry": {"max": 1, "exit_codes": [1, 2]}}}),
    (NPM / "webpack" / "schemas" / "WebpackOptions.json", {"entry": {"main": ["./a.js", "./b.js"]},
                                                            "mode": "production"}),
    (STORE / "dependabot.json", {"version": 2, "updates": [{"package-ecosystem": "npm", "directory": "/",
                                                            "schedule": {"interval": "daily"}}]}),
    (STORE / "bitbucket-pipelines.json", {"pipelines": {"default": [{"step": {"script": ["make"]}}]}}),
    (STORE / "compose-spec.json", {"services": {"web": {"image": "nginx", "cap_add": ["NET_ADMIN", "SYS_TIME"]}}}),
    (STORE / "github-issue-forms.json", {"name": "Bug", "description": "d", "labels": ["bug", "triage"],
                                         "body": [{"type": "markdown", "attributes": {"value": "hi"}}]}),
    (STORE / "buildkite.json", {"steps": [{"command": "make"}]}),
    (STORE / "citation-file-format.json", {"cff-version": "1.2.0", "message": "m", "title": "t",
                                           "authors": [{"name": "A"}], "license": ["MIT", "Apache-2.0"]}),
]


def _draft(schema: dict) -> type:
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def measure(path: Path, document: dict) -> tuple[str, ...]:
    schema = json.loads(path.read_text())
    assert _draft(schema)(schema).is_valid(document), path.name
    vocab = byte_vocab()
    start = time.thread_time()
    try:
        grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    except Exception as exc:  # refused: the row says why
        return path.name, f"{type(exc).__name__}", f"{(time.thread_time() - start) * 1e3:.0f}", "", "", "", ""
    compile_ms = (time.thread_time() - start) * 1e3
    matcher = grammar.matcher(max_step_seconds=None)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    times = []
    spelled = accepted_text(grammar, document, property_rank(schema))  # the grammar's member order
    if spelled is None:
        return path.name, "rejects the document", f"{compile_ms:.0f}", "", "", "", ""
    text = spelled.encode()
    for b in text:
        start = time.thread_time()
        matcher.fill_next_token_bitmask(bitmask)
        times.append((time.thread_time() - start) * 1e6)
        assert matcher.accept_token(b), (path.name, text)
    times.sort()
    return (path.name, "compiled", f"{compile_ms:.0f}", str(len(text)), f"{times[len(times) // 2]:.0f}",
            f"{times[-1]:.0f}", f"{sum(times) / 1e3:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "unique_readings.md")
    args = parser.parse_args()
    rows = []
    for path, document in CASES:
        rows.append(measure(path, document))
        print(" | ".join(rows[-1]), flush=True)
    import formwork
    tree = Path(formwork.__path__[0])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True,
                            text=True).stdout.strip()
    lines = ["# uniqueItems where branches disagree: compile and mask cost", "",
             f"`benchmarks/unique_readings.py` with formwork from {tree} ({commit}), "
             f"{platform.machine()}, Python {platform.python_version()}; thread CPU; byte vocabulary.", "",
             "| schema | verdict | compile ms | document bytes | mask p50 us | mask max us | masks ms |",
             "|---|---|---:|---:|---:|---:|---:|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
