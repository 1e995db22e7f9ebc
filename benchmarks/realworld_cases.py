"""Benchmark cases from the real-world corpora of `corpus.py` (iglu-central, schemastore,
test-suite, kubernetes, bfcl, github-npm): each schema with instances generated as `corpus.py`
does (hypothesis-jsonschema, labelled valid by `jsonschema`), serialised with `json.dumps`
separators, members in the order the schema declares them (the order every engine emits),
non-ASCII text unescaped.

Generating instances takes ~0.2 s a schema, so they are kept in a cache file
(`~/.cache/formwork-bench/realworld-instances.json`, keyed by corpus, schema name and text, count
and seed) and generated on a miss by a pool of worker processes.
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import time
import zlib
from pathlib import Path
from typing import Any

import corpus
from grammar_harness import Case
from json_spelling_search import _ranked, property_rank
from real_world_corpus import make_validator, valid_instances

CACHE = Path(os.environ.get("FORMWORK_BENCH_CACHE", Path.home() / ".cache" / "formwork-bench")) \
    / "realworld-instances.json"
CORPORA = tuple(corpus.CORPORA)
IGLU_META = "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/"


def _key(name: str, entry: corpus.Entry, examples: int, seed: int) -> str:
    text = json.dumps([name, entry.name, entry.schema, examples, seed], sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()


def _generate(job: tuple[corpus.Entry, int, int, float]) -> list[str]:
    entry, examples, seed, seconds = job
    try:
        validator = make_validator(entry.schema, entry.registry, entry.default_validator)
    except Exception:  # noqa: BLE001 - jsonschema cannot read it: no instances
        return []
    found, _ = valid_instances(entry.schema, validator, entry.registry, examples,
                               seed=zlib.crc32(f"{seed}:{entry.name}".encode()), seconds=seconds)
    return [json.dumps(v) for v in found]


def _read_cache() -> dict[str, list[str]]:
    try:
        return json.loads(CACHE.read_text())
    except (OSError, ValueError):
        return {}


def load_corpus(name: str, limit: int | None = None, examples: int = 3, seed: int = 0,
                seconds: float | None = None, jobs: int = 2) -> list[Case]:
    """The corpus's schemas as `Case`s (named `<corpus>:<schema>`), instances from the cache or
    generated now; schemas without instances are kept (compiled and first mask only)."""
    entries = corpus.CORPORA[name]()[:limit]
    seconds = seconds or (4.0 if name in ("schemastore", "kubernetes", "github-npm") else 1.0)  # large schemas
    cache = _read_cache()
    keys = [_key(name, e, examples, seed) for e in entries]
    missing = [(k, e) for k, e in zip(keys, entries) if k not in cache]
    if missing:
        start = time.perf_counter()
        print(f"[realworld] {name}: generating instances for {len(missing)} schemas", flush=True)
        jobs_args = [(e, examples, seed, seconds) for _, e in missing]
        with multiprocessing.get_context("fork").Pool(jobs, maxtasksperchild=50) as pool:
            for (k, _), got in zip(missing, pool.imap(_generate, jobs_args, chunksize=4)):
                cache[k] = got
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(_read_cache() | cache))
        print(f"[realworld] {name}: generated in {time.perf_counter() - start:.0f} s", flush=True)
    return [Case(f"{name}:{e.name}", "json_schema", _draft4_meta(e.schema), _in_schema_order(e, cache[k]),
                 _options(e)) for k, e in zip(keys, entries)]


def _draft4_meta(schema: Any) -> Any:
    """An Iglu schema with draft-04's `$schema` instead of Snowplow's self-describing meta-schema
    (which the peers try to fetch and fail on; `jsonschema` reads Iglu as draft-04 too)."""
    if isinstance(schema, dict) and str(schema.get("$schema", "")).startswith(IGLU_META):
        return {**schema, "$schema": "http://json-schema.org/draft-04/schema#"}
    return schema


def _in_schema_order(entry: corpus.Entry, texts: list[str]) -> list[str]:
    """The instances as a model would write them: members in schema order, non-ASCII characters
    as UTF-8 (not escaped); one with a lone surrogate (no UTF-8 spelling) is left out."""
    rank = property_rank(entry.schema, *entry.registry.values())
    out = []
    for text in texts:
        spelled = json.dumps(_ranked(json.loads(text), rank), ensure_ascii=False)
        try:
            spelled.encode("utf-8")
        except UnicodeEncodeError:
            continue
        out.append(spelled)
    return out


def _options(entry: corpus.Entry) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if entry.registry:
        options["registry"] = entry.registry
    if entry.draft:
        options["draft"] = entry.draft
    return options
