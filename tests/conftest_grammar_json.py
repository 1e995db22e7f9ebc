"""Helpers for the JSON Schema grammar tests: the JSON Schema Test Suite runner (shared with
`benchmarks/conformance.py`) and instance spellings.

An instance is checked through `Matcher.accept_string` on its compact JSON text.  Because the
grammar fixes some choices that JSON leaves open, a *valid* instance counts as accepted when one of
its equivalent spellings is accepted, and an *invalid* instance counts as rejected only when every
spelling is rejected.  The spellings vary exactly these things:

* object member order (the grammar emits declared properties in schema order, extras last);
* integral floats written as integers (``1.0`` -> ``1``: the grammar's canonical number spelling),
  except for draft-04's invalid instances (``1.0`` is not an integer there, ``1`` is);
* non-ASCII characters raw or as ``\\uXXXX`` escapes (``ensure_ascii`` on or off).
"""
from __future__ import annotations

import functools
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from formwork.grammar.compiler import GrammarCompiler
from formwork.grammar.errors import EmptyLanguageError, GrammarError
from formwork.grammar.json_schema import compile_json_schema
from formwork.grammar.json_schema.options import BOUNDED_NESTING_DEPTH
from formwork.grammar.vocabulary import Vocabulary

REPO = Path(__file__).resolve().parent.parent
SUITE_DIRS = [REPO / "tests" / "data" / "json-schema-test-suite",
              Path("/work/shared/data/json-schema-test-suite")]
MAX_SPELLINGS = 256
NESTING = BOUNDED_NESTING_DEPTH  # bound on any-JSON values (the "auto" default inside constrained schemas)
DRAFTS = {"draft2020-12": "2020-12", "draft2019-09": "2019-09", "draft7": "draft-07",
          "draft6": "draft-06", "draft4": "draft-04"}


def suite_dir() -> Path:
    """The vendored copy of the JSON Schema Test Suite (the shared data as a fallback)."""
    for d in SUITE_DIRS:
        if (d / "tests").is_dir():
            return d
    raise FileNotFoundError("JSON Schema Test Suite not found in " + ", ".join(map(str, SUITE_DIRS)))


@functools.lru_cache(maxsize=1)
def remotes() -> dict[str, Any]:
    """The suite's remote documents by the URI the tests use (http://localhost:1234/...)."""
    base = suite_dir() / "remotes"
    out = {}
    for path in sorted(base.rglob("*.json")):
        out["http://localhost:1234/" + path.relative_to(base).as_posix()] = json.loads(path.read_text())
    return out


def suite_files(draft: str) -> list[Path]:
    root = suite_dir() / "tests" / draft
    return sorted(root.glob("*.json")) + sorted((root / "optional").glob("*.json")) + \
        sorted((root / "optional" / "format").glob("*.json"))


@functools.lru_cache(maxsize=1)
def byte_vocab() -> Vocabulary:
    """256 one-byte tokens and a stop token: enough for accept_string."""
    return Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])


# ---------------------------------------------------------------------- spellings
def _number_spellings(value: float | int, integral: bool) -> list[str]:
    out = [json.dumps(value)]
    if integral and isinstance(value, float) and value.is_integer():
        out.append(str(int(value)))
    return out


def _spell(value: Any, ascii_: bool, integral: bool) -> list[str]:
    if isinstance(value, bool) or value is None:
        return [json.dumps(value)]
    if isinstance(value, (int, float)):
        return _number_spellings(value, integral)
    if isinstance(value, str):
        return [json.dumps(value, ensure_ascii=ascii_)]
    if isinstance(value, list):
        parts = [_spell(v, ascii_, integral) for v in value]
        return ["[" + ",".join(c) + "]"
                for c in itertools.islice(itertools.product(*parts), MAX_SPELLINGS)]
    out: list[str] = []
    items = list(value.items())
    for order in itertools.islice(itertools.permutations(items), 120):
        parts = [[json.dumps(k, ensure_ascii=ascii_) + ":" + s for s in _spell(v, ascii_, integral)]
                 for k, v in order]
        for c in itertools.islice(itertools.product(*parts), MAX_SPELLINGS):
            out.append("{" + ",".join(c) + "}")
            if len(out) >= MAX_SPELLINGS:
                return out
    return out


def spellings(value: Any, integral_floats: bool = True) -> list[str]:
    """Equivalent compact spellings of an instance, the plain `json.dumps` one first;
    `integral_floats=False` keeps `1.0` apart from `1` (draft-04 tells them apart: `1.0` is not
    an integer there)."""
    first = json.dumps(value, separators=(",", ":"))
    out = dict.fromkeys([first])
    for ascii_ in (True, False):
        out.update(dict.fromkeys(_spell(value, ascii_, integral_floats)))
    return list(out)[:MAX_SPELLINGS * 2]


# ---------------------------------------------------------------------- running
@dataclass
class GroupResult:
    file: str
    description: str
    compiled: bool
    reason: str = ""
    valid_total: int = 0
    valid_accepted: int = 0
    invalid_total: int = 0
    invalid_rejected: int = 0
    wrongly_accepted: list[str] = field(default_factory=list)
    wrongly_rejected: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def fully_right(self) -> bool:
        return self.compiled and self.valid_accepted == self.valid_total and \
            self.invalid_rejected == self.invalid_total


def run_group(file: str, group: dict, draft: str, compiler: GrammarCompiler) -> GroupResult:
    start = time.perf_counter()
    result = GroupResult(file, group["description"], compiled=False)
    try:
        grammar = compile_json_schema(group["schema"], compiler.vocab, registry=remotes(),
                                      draft=DRAFTS[draft], compiler=compiler,
                                      max_nesting_depth=NESTING)
    except EmptyLanguageError:
        grammar = None  # the compiler proved that no instance is valid: it accepts none
    except GrammarError as exc:
        result.reason = f"{type(exc).__name__}: {exc}"
        result.seconds = time.perf_counter() - start
        return result
    result.compiled = True
    for test in group["tests"]:
        accepted = False
        # draft-04 tells 1.0 from 1 for `type: integer` only: an invalid 1.0 is never spelled 1
        integral = draft != "draft4" or test["valid"]
        for text in spellings(test["data"], integral_floats=integral) if grammar else ():
            m = grammar.matcher()
            if m.accept_string(text) and m.can_terminate():
                accepted = True
                break
        if test["valid"]:
            result.valid_total += 1
            result.valid_accepted += accepted
            if not accepted:
                result.wrongly_rejected.append(test["description"])
        else:
            result.invalid_total += 1
            result.invalid_rejected += not accepted
            if accepted:
                result.wrongly_accepted.append(test["description"])
    result.seconds = time.perf_counter() - start
    return result


def run_suite(draft: str) -> list[GroupResult]:
    """Every group of every file of `draft` (a key of `DRAFTS`: "draft2020-12", "draft4", ...)."""
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False)
    root = suite_dir() / "tests" / draft
    results = []
    for path in suite_files(draft):
        name = path.relative_to(root).as_posix()
        for group in json.loads(path.read_text()):
            results.append(run_group(name, group, draft, compiler))
    return results


def iter_files(results: list[GroupResult]) -> Iterator[tuple[str, list[GroupResult]]]:
    for name, group in itertools.groupby(results, key=lambda r: r.file):
        yield name, list(group)
