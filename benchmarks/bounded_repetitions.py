"""Large bounded repetitions: compile time and peak memory growth, and the Iglu Central sweep.

Per case (each in a fresh process, so peak RSS growth is the compile's own): compile time of
`compile_json_schema` with a byte vocabulary and compiled-grammar caches off, and the growth of
the process's peak RSS (ru_maxrss) across that compile.  Then every schema of the Iglu Central
corpus (`*/jsonschema/*`) compiled under the default budget, refusals counted by message.

    .venv/bin/python benchmarks/bounded_repetitions.py [--iglu DIR] [--out PATH] [--no-sweep]
        [--max-nfa-states N]   (the cases' NFA budget; the sweep always uses the default)
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_OUTSIDE = os.path.dirname(os.path.dirname(HERE))  # not the repository root, whose folders would shadow modules
IGLU = "/work/shared/data/iglu-central/schemas"
WD_ACCESS_LOG = "com.amazon.aws.cloudfront/wd_access_log/jsonschema/1-0-0"
CASES = {
    "maxLength 100000": json.dumps({"type": "string", "maxLength": 100000}),
    "maxLength 10000, pattern": json.dumps({"type": "string", "maxLength": 10000, "pattern": "^[a-z]+$"}),
    "maxItems 1000": json.dumps({"type": "array", "items": {"type": "integer"}, "maxItems": 1000}),
}

_ONE = r"""
import json, resource, sys, time
from formwork.grammar.compiler import GrammarCompiler
from formwork.grammar.json_schema import compile_json_schema
from formwork.grammar.vocabulary import Vocabulary
vocab = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])
from formwork.grammar.budget import CompileBudget
compiler = GrammarCompiler(vocab, cache_enabled=False, budget=CompileBudget(max_nfa_states=int(sys.argv[1])))
compile_json_schema('{"type": "string"}', vocab, compiler=compiler)  # imports, shared tables
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
try:
    g = compile_json_schema(sys.stdin.read(), vocab, compiler=compiler)
    m = g.matcher()
    m.fill_next_token_bitmask(__import__("formwork.grammar", fromlist=["x"]).allocate_token_bitmask(1, 257))
    error = ""
except Exception as exc:  # reported, not raised: the table says why
    error = f"{type(exc).__name__}: {exc}"
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ms": 1e3 * seconds, "rss_mb": (after - before) / 1024, "error": error}))
"""

_SWEEP = r"""
import collections, glob, json, os, re, sys, time
from formwork.grammar.compiler import GrammarCompiler
from formwork.grammar.json_schema import compile_json_schema
from formwork.grammar.vocabulary import Vocabulary
vocab = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])
root = sys.argv[1]
files = sorted(p for p in glob.glob(os.path.join(root, "*", "*", "jsonschema", "*")) if os.path.isfile(p))
causes, slowest, ok = collections.Counter(), [], 0
for path in files:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    start = time.perf_counter()
    try:
        compile_json_schema(text, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
        ok += 1
    except Exception as exc:
        message = re.sub(r"\d+", "N", str(exc).split("\n")[0])[:110]
        causes[f"{type(exc).__name__}: {message}"] += 1
    slowest.append((time.perf_counter() - start, os.path.relpath(path, root)))
slowest.sort(reverse=True)
print(json.dumps({"total": len(files), "ok": ok, "causes": causes.most_common(), "slowest": slowest[:5]}))
"""


def run_one(schema: str, max_nfa_states: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _ONE, str(max_nfa_states)], input=schema, capture_output=True, text=True,
                         check=True, cwd=_OUTSIDE)
    return json.loads(out.stdout.strip().splitlines()[-1])


def sweep(root: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _SWEEP, root], capture_output=True, text=True, check=True,
                         cwd=_OUTSIDE)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _git_head() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(HERE)).stdout.strip()
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iglu", default=IGLU)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "bounded_repetitions.md"))
    parser.add_argument("--max-nfa-states", type=int, default=500_000, help="the cases' NFA budget")
    parser.add_argument("--no-sweep", action="store_true", help="skip the Iglu Central sweep")
    args = parser.parse_args()
    cases = dict(CASES)
    with open(os.path.join(args.iglu, WD_ACCESS_LOG), encoding="utf-8") as f:
        cases[f"iglu {WD_ACCESS_LOG.split('/')[1]}"] = f.read()
    lines = ["# Large bounded repetitions", "",
             f"formwork git {_git_head()}, {time.strftime('%Y-%m-%d')}; byte vocabulary (257 tokens), "
             f"compiled-grammar cache off, CompileBudget(max_nfa_states={args.max_nfa_states:,}); each case in a fresh process "
             "(compile + first mask; peak RSS growth = ru_maxrss after minus before).", "",
             "| case | compile + first mask ms | peak RSS growth MB | result |", "|---|---:|---:|---|"]
    for name, schema in cases.items():
        got = run_one(schema, args.max_nfa_states)
        result = got["error"][:90] or "ok"
        lines.append(f"| {name} | {got['ms']:.1f} | {got['rss_mb']:.1f} | {result} |")
        print(lines[-1], flush=True)
    if not args.no_sweep:
        start = time.perf_counter()
        got = sweep(args.iglu)
        lines += ["", f"Iglu Central ({args.iglu}): {got['ok']} of {got['total']} schemas compile under the "
                  f"default budget ({time.perf_counter() - start:.0f} s for the sweep).", "",
                  "| refusal (digits as N) | schemas |", "|---|---:|"]
        lines += [f"| {cause.replace('|', '/')} | {n} |" for cause, n in got["causes"]]
        lines += ["", "Slowest: " + ", ".join(f"{path} {1e3 * s:.0f} ms" for s, path in got["slowest"])]
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
