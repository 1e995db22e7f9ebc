"""Real-world JSON Schema corpora through formwork: compile every schema, check generated instances.

    .venv/bin/python benchmarks/corpus.py                  # every corpus; writes benchmarks/results/corpus.md
    .venv/bin/python benchmarks/corpus.py --corpus iglu-central --limit 50 --examples 5

Corpora: `iglu-central` (Snowplow's schemas, /work/shared/data/iglu-central: the files under a
`jsonschema` folder; `$ref`s to `http://iglucentral.com/schemas/...` or `iglu:...` resolve to the
corpus's own files), `schemastore` (SchemaStore schemas vendored in `benchmarks/corpora/schemastore`),
`kubernetes` (standalone schemas of 53 Kubernetes v1.37 kinds, `benchmarks/corpora/kubernetes`),
`bfcl` (300 function-calling parameter schemas of the Berkeley Function Calling Leaderboard,
`benchmarks/corpora/bfcl/schemas.jsonl`), `github-npm` (GitHub projects' schemas as their npm
packages ship them, `benchmarks/corpora/github-npm`; `$ref`s between one package's files resolve
through `registry=`) and `test-suite` (every distinct schema of the JSON Schema Test Suite, five
drafts, optional files too). Each vendored corpus has a SOURCE.md and a `build.py` that remakes it.

Each schema is compiled with a fresh, uncached `GrammarCompiler` over a byte vocabulary; then valid
instances (hypothesis-jsonschema) and invalid ones (mutations), both labelled by `jsonschema`, are
checked against the grammar (see `tests/real_world_corpus.py` and `tests/json_spelling_search.py`). Reported per corpus: schemas,
compiled, refused by cause (exception class and keyword), compile time, valid instances accepted,
invalid instances accepted (each listed: every one is a soundness bug).
"""
from __future__ import annotations

import argparse
import collections
import json
import multiprocessing
import os
import platform
import random
import re
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urljoin

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from conftest_grammar_json import DRAFTS, remotes, suite_dir, suite_files  # noqa: E402
from json_spelling_search import Undecided, accepted_text, property_rank  # noqa: E402
from real_world_corpus import (  # noqa: E402
    _refs, iglu_documents, integral_floats, invalid_instances, make_validator, referenced,
    valid_instances,
)

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.vocabulary import Vocabulary  # noqa: E402

IGLU_ROOT = Path("/work/shared/data/iglu-central/schemas")
SCHEMASTORE_ROOT = ROOT / "benchmarks" / "corpora" / "schemastore"
KUBERNETES_ROOT = ROOT / "benchmarks" / "corpora" / "kubernetes"
BFCL_FILE = ROOT / "benchmarks" / "corpora" / "bfcl" / "schemas.jsonl"
GITHUB_NPM_ROOT = ROOT / "benchmarks" / "corpora" / "github-npm"
VALIDATORS = {"draft2020-12": jsonschema.Draft202012Validator,
              "draft2019-09": jsonschema.Draft201909Validator, "draft7": jsonschema.Draft7Validator,
              "draft6": jsonschema.Draft6Validator, "draft4": jsonschema.Draft4Validator}
SAMPLES = 25  # valid-but-rejected instances listed per corpus


@dataclass
class Entry:
    """One schema of a corpus, with what compiling and judging it needs."""

    name: str
    schema: Any
    registry: dict[str, Any]
    default_validator: type  # jsonschema's class when `$schema` is missing or unknown
    draft: str | None = None  # formwork's `draft=` (schemas without `$schema`)


@dataclass
class Result:
    name: str
    compiled: bool = False
    cause: str = ""
    reason: str = ""
    compile_s: float = 0.0
    no_instances: str = ""  # why no valid instance was generated
    valid: int = 0
    valid_accepted: int = 0
    nesting_only: int = 0  # valid instances rejected, accepted with max_nesting_depth=None
    rejected: list[str] = field(default_factory=list)  # other valid instances rejected (capped)
    invalid: int = 0
    wrongly_accepted: list[str] = field(default_factory=list)  # accepted spellings of invalid ones
    undecided: int = 0


# ---------------------------------------------------------------------- corpora
def iglu_entries() -> list[Entry]:
    docs = iglu_documents(IGLU_ROOT)
    return [Entry(uri[len("iglu:"):], doc, referenced(doc, docs), jsonschema.Draft4Validator)
            for uri, doc in docs.items() if uri.startswith("iglu:")]


def schemastore_entries() -> list[Entry]:
    return [Entry(p.name, json.loads(p.read_text()), {}, jsonschema.Draft202012Validator)
            for p in sorted(SCHEMASTORE_ROOT.glob("*.json"))]


def kubernetes_entries() -> list[Entry]:
    return [Entry(p.name, json.loads(p.read_text()), {}, jsonschema.Draft202012Validator)
            for p in sorted(KUBERNETES_ROOT.glob("*.json"))]


def bfcl_entries() -> list[Entry]:
    rows = [json.loads(line) for line in BFCL_FILE.read_text().splitlines() if line.strip()]
    return [Entry(row["name"], row["schema"], {}, jsonschema.Draft202012Validator) for row in rows]


def _base_uri(doc: Any) -> str:
    """A document's own URI: its `$id` (draft-04: `id`) without the empty fragment, else ''."""
    uri = doc.get("$id", doc.get("id")) if isinstance(doc, dict) else None
    return uri.split("#")[0] if isinstance(uri, str) else ""


def package_registry(path: Path, docs: dict[Path, Any]) -> dict[str, Any]:
    """The documents of one package that the schema at `path` reaches through `$ref`, by URI:
    each file under its `$id` and under its path relative to the schema's `$id`."""
    base = _base_uri(docs[path])
    known: dict[str, Any] = {}
    for other, doc in docs.items():
        uris = [_base_uri(doc)]
        if base:
            uris.append(urljoin(base, os.path.relpath(other, path.parent)))
        known.update((uri, doc) for uri in uris if uri and other != path)
    out: dict[str, Any] = {}
    todo = [(docs[path], base)]
    while todo:
        doc, doc_base = todo.pop()
        for ref in _refs(doc):
            uri = urljoin(doc_base, ref).split("#")[0]
            if uri in known and uri not in out:
                out[uri] = known[uri]
                todo.append((known[uri], _base_uri(known[uri]) or uri))
    return out


def github_npm_entries() -> list[Entry]:
    out = []
    for package in sorted(p for p in GITHUB_NPM_ROOT.iterdir() if p.is_dir() and p.name != "licenses"):
        docs = {p: json.loads(p.read_text()) for p in sorted(package.rglob("*.json"))}
        out += [Entry(path.relative_to(GITHUB_NPM_ROOT).as_posix(), doc, package_registry(path, docs),
                      jsonschema.Draft7Validator) for path, doc in docs.items()]
    return out


def test_suite_entries() -> list[Entry]:
    out, seen = [], set()
    for folder, draft in DRAFTS.items():
        root = suite_dir() / "tests" / folder
        for path in suite_files(folder):
            for i, group in enumerate(json.loads(path.read_text())):
                key = (folder, json.dumps(group["schema"], sort_keys=True))
                if key not in seen:
                    seen.add(key)
                    out.append(Entry(f"{folder}/{path.relative_to(root).as_posix()}#{i}",
                                     group["schema"], remotes(), VALIDATORS[folder], draft))
    return out


CORPORA: dict[str, Callable[[], list[Entry]]] = {
    "iglu-central": iglu_entries, "schemastore": schemastore_entries,
    "kubernetes": kubernetes_entries, "bfcl": bfcl_entries, "github-npm": github_npm_entries,
    "test-suite": test_suite_entries}


# ---------------------------------------------------------------------- checking one schema
VOCAB = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])


def cause_of(exc: Exception) -> str:
    """The exception class and the keyword (or budget) it names; else the reason's words."""
    keyword = getattr(exc, "keyword", None)
    if not keyword and "(budget " in str(exc):
        keyword = str(exc).split("(budget ")[1].split(")")[0]
    if not keyword:  # the reason without its quoted names and numbers
        keyword = re.sub(r"'[^']*'|\d+", "...", (str(exc).splitlines() or [""])[0])[:70]
    if not isinstance(exc, ValueError):  # a GrammarError is a ValueError; anything else crashed
        return f"crash: {type(exc).__name__}"
    return f"{type(exc).__name__}: {keyword}" if keyword else type(exc).__name__


def _compile(entry: Entry, **options: Any) -> Any:
    return compile_json_schema(entry.schema, VOCAB, registry=entry.registry or None,
                               draft=entry.draft, compiler=GrammarCompiler(VOCAB, cache_enabled=False),
                               **options)


def _accepts(grammar: Any, value: Any, rank: dict[str, int], integral: bool) -> bool | None:
    try:
        return accepted_text(grammar, value, rank, integral) is not None
    except Undecided:
        return None


def check(entry: Entry, examples: int, seed: int, seconds: float) -> Result:
    """Compile one schema and check generated instances against it."""
    out = Result(entry.name)
    start = time.perf_counter()
    try:
        grammar = _compile(entry)
    except Exception as exc:  # noqa: BLE001 - a refusal or a crash, both reported
        out.compile_s = time.perf_counter() - start
        out.cause, out.reason = cause_of(exc), (str(exc).splitlines() or [""])[0][:300]
        return out
    out.compile_s = time.perf_counter() - start
    out.compiled = True
    validator = make_validator(entry.schema, entry.registry, entry.default_validator)
    integral = integral_floats(validator)
    rank = property_rank(entry.schema, *entry.registry.values())
    own_seed = zlib.crc32(f"{seed}:{entry.name}".encode())
    valid, out.no_instances = valid_instances(entry.schema, validator, entry.registry, examples,
                                              seed=own_seed, seconds=seconds)
    rejected = []
    for value in valid:
        got = _accepts(grammar, value, rank, integral)
        out.undecided += got is None
        out.valid += got is not None
        out.valid_accepted += bool(got)
        if got is False:
            rejected.append(value)
    if rejected:  # which rejections are only the bound on open values' nesting
        try:
            exact = _compile(entry, max_nesting_depth=None)
        except Exception:  # noqa: BLE001 - then none is attributed to the bound
            exact = None
        for value in rejected:
            if exact is not None and _accepts(exact, value, rank, integral):
                out.nesting_only += 1
            elif len(out.rejected) < 3:
                out.rejected.append(json.dumps(value, ensure_ascii=False)[:300])
    for value in invalid_instances(valid, validator, random.Random(own_seed), per_instance=2):
        try:
            text = accepted_text(grammar, value, rank, integral)
        except Undecided:
            out.undecided += 1
            continue
        out.invalid += 1
        if text is not None:
            out.wrongly_accepted.append(text)
    return out


def _check_star(args: tuple) -> Result:
    return check(*args)


def run_corpus(name: str, args: argparse.Namespace) -> list[Result]:
    entries = CORPORA[name]()[:args.limit]
    print(f"{name}: {len(entries)} schemas", flush=True)
    jobs = [(e, args.examples, args.seed, args.seconds) for e in entries]
    results: list[Result] = []
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=50) as pool:
        for r in pool.imap(_check_star, jobs):
            results.append(r)
            if len(results) % 50 == 0 or len(results) == len(entries):
                print(f"  {len(results)}/{len(entries)} checked, "
                      f"{sum(x.compiled for x in results)} compiled, "
                      f"{time.perf_counter() - start:.0f} s", flush=True)
    return results


# ---------------------------------------------------------------------- report
def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] if values else 0.0


def summary(name: str, rs: list[Result]) -> dict[str, Any]:
    times = [r.compile_s for r in rs if r.compiled]
    return {"corpus": name, "schemas": len(rs), "compiled": sum(r.compiled for r in rs),
            "refused": sum(not r.compiled and not r.cause.startswith("crash") for r in rs),
            "crashed": sum(r.cause.startswith("crash") for r in rs),
            "compile_ms": "/".join(f"{1000 * _pct(times, q):.0f}" for q in (0.5, 0.99, 1.0)),
            "valid": f"{sum(r.valid_accepted for r in rs)}/{sum(r.valid for r in rs)}",
            "nesting": sum(r.nesting_only for r in rs),
            "invalid": f"{sum(len(r.wrongly_accepted) for r in rs)}/{sum(r.invalid for r in rs)}",
            "no_instances": sum(r.compiled and r.valid == 0 for r in rs),
            "undecided": sum(r.undecided for r in rs)}


HEADERS = ["corpus", "schemas", "compiled", "refused", "crashed", "compile ms p50/p99/max",
           "valid accepted/generated", "valid rejected for the nesting bound only", "invalid accepted/generated", "compiled, no valid instance",
           "undecided checks"]


def table(rows: list[dict[str, Any]]) -> list[str]:
    out = ["| " + " | ".join(HEADERS) + " |", "|---" + "|---:" * (len(HEADERS) - 1) + "|"]
    out += ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows]
    return out


def section(name: str, rs: list[Result]) -> list[str]:
    out = [f"## {name}", ""] + table([summary(name, rs)]) + ["", "Refusals by cause:", ""]
    causes = collections.Counter(r.cause for r in rs if not r.compiled)
    out += [f"- {n} x `{c}`" for c, n in causes.most_common()] or ["- none"]
    wrong = [(r.name, t) for r in rs for t in r.wrongly_accepted]
    out += ["", f"Invalid instances accepted: {len(wrong)}", ""]
    out += [f"- `{n}`: `{t[:400]}`" for n, t in wrong]
    rejected = [(r.name, t) for r in rs for t in r.rejected]
    other = sum(r.valid - r.valid_accepted - r.nesting_only for r in rs)
    out += ["", f"Valid instances rejected: {other}, besides those accepted once open values may "
            f"nest deeper (`max_nesting_depth=None`; first {SAMPLES} listed, at most 3 per schema)", ""]
    out += [f"- `{n}`: `{t}`" for n, t in rejected[:SAMPLES]]
    gen = collections.Counter(r.no_instances.split(":")[0] for r in rs if r.compiled and not r.valid)
    out += ["", "Compiled schemas with no valid instance checked, by generation failure:", ""]
    out += [f"- {n} x {why or 'all instances undecided'}" for why, n in gen.most_common()] or ["- none"]
    out += ["", "Refused schemas (first line of the reason):", ""]
    out += [f"- `{r.name}`: {r.reason}" for r in sorted(rs, key=lambda r: (r.cause, r.name))
            if not r.compiled]
    return out + [""]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", action="append", choices=sorted(CORPORA), help="repeatable; default all")
    p.add_argument("--limit", type=int, default=None, help="first N schemas of each corpus")
    p.add_argument("--examples", type=int, default=8, help="valid instances wanted per schema")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=1.5, help="generation time limit per schema")
    p.add_argument("--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "corpus.md")
    args = p.parse_args(argv)
    names = args.corpus or list(CORPORA)
    commit = subprocess.run(["git", "log", "-1", "--format=%h"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    start = time.perf_counter()
    results = {name: run_corpus(name, args) for name in names}
    rows = [summary(n, rs) for n, rs in results.items()]
    print("\n".join(table(rows)))
    out = ["# Real-world JSON Schema corpora", "",
           f"Generated by `benchmarks/corpus.py` from commit {commit} (the working tree as it was) until "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.platform()}, "
           f"Python {platform.python_version()}; {args.examples} valid instances wanted per schema "
           f"({args.seconds:g} s generation limit), 2 mutants per valid one, seed {args.seed}, "
           f"{args.jobs} worker processes, {time.perf_counter() - start:.0f} s in all.", "",
           "Valid instances: hypothesis-jsonschema; invalid ones: one-place mutations; both labelled "
           "by `jsonschema` (the schema's draft, format checking on; Iglu as draft-04). An instance "
           "is accepted when one of its spellings (member order, `1.0` as `1`, escapes) is. Compile "
           "times are per schema with a fresh, uncached compiler and a 257-token byte vocabulary.",
           ""] + table(rows) + [""]
    for name, rs in results.items():
        out += section(name, rs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(out))
    print(f"wrote {args.out} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
