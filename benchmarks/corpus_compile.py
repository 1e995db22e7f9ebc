"""Compile every schema of real-world corpora (compile only, no instances): per schema whether it
compiled or the first line of its refusal, and its compile CPU time (`time.thread_time`, a fresh
uncached compiler, as `corpus.py` compiles).  For an A/B of two working trees, run it under each
(`PYTHONPATH=<copy's parent>`) into two JSON files and compare them with `--compare A.json B.json`.

    .venv/bin/python benchmarks/corpus_compile.py --corpus github-npm --json /tmp/b.json
    .venv/bin/python benchmarks/corpus_compile.py --compare /tmp/a.json /tmp/b.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

ENTRIES = {"github-npm": corpus.github_npm_entries, "schemastore": corpus.schemastore_entries,
           "kubernetes": corpus.kubernetes_entries}


def compile_all(names: list[str]) -> dict[str, dict]:
    """{corpus/schema: {"ok": bool, "ms": CPU ms, "cause": first line of the refusal}}."""
    out = {}
    for name in names:
        for entry in ENTRIES[name]():
            start = time.thread_time()
            try:
                corpus._compile(entry)
                cause = ""
            except Exception as exc:  # a refusal or a crash, recorded by its first line
                cause = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            out[f"{name}/{entry.name}"] = {"ok": not cause, "ms": 1000 * (time.thread_time() - start),
                                           "cause": cause}
    return out


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def compare(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    """A markdown table of the schemas whose outcome differs, then compile CPU ms p50/p99/max
    over the schemas both compiled, per side."""
    lines = ["| schema | A | B | A ms | B ms |", "|---|---|---|---:|---:|"]
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        if x["ok"] != y["ok"] or x["cause"] != y["cause"]:
            lines.append(f"| `{key}` | {x['cause'] or 'compiled'} | {y['cause'] or 'compiled'} | "
                         f"{x['ms']:.0f} | {y['ms']:.0f} |")
    both = [k for k in a.keys() & b.keys() if a[k]["ok"] and b[k]["ok"]]
    for label, side in (("A", a), ("B", b)):
        ms = [side[k]["ms"] for k in both]
        lines.append(f"\n{label}: {sum(v['ok'] for v in side.values())}/{len(side)} compiled; over the "
                     f"{len(both)} both compiled, CPU ms p50/p99/max "
                     f"{_pct(ms, .5):.0f}/{_pct(ms, .99):.0f}/{max(ms, default=0):.0f}, sum {sum(ms):.0f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=sorted(ENTRIES))
    parser.add_argument("--json", help="write the per-schema results here")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        print("\n".join(compare(a, b)))
        return
    results = compile_all(args.corpus or sorted(ENTRIES))
    for key, r in results.items():
        print(f"{r['ms']:9.0f} ms  {key}  {r['cause'] or 'compiled'}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
