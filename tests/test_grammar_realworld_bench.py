"""The real-world grammar benchmark's machinery: engine workers killed past their timeout, the
schemas every engine compiles, and the slowest masks with their positions."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from engine_workers import EngineWorker, run_isolated  # noqa: E402
from grammar_harness import Case, CaseResult, Engine  # noqa: E402
from realworld_report import common_cases, worst_masks  # noqa: E402

TOK = SimpleNamespace(vocab_size=256, eos=0, encode=lambda text: list(text.encode()),
                      tokenizer=SimpleNamespace(decode=lambda ids: bytes(ids).decode()))


class Sleepy(Engine):
    """Accepts every token; compiling a case named 'slow' never ends, 'bad' raises."""

    name = "sleepy"

    def compile(self, case: Case) -> Any:
        if case.name == "bad":
            raise RuntimeError("refused")
        while case.name == "slow":
            time.sleep(0.05)
        return case

    def start(self, compiled: Any) -> Any:
        return compiled

    def fill(self, matcher: Any, bitmask: torch.Tensor) -> None:
        bitmask.fill_(-1)

    def accept(self, matcher: Any, token: int) -> bool:
        return True


def test_worker_killed_past_timeout_then_restarted() -> None:
    worker = EngineWorker("sleepy", TOK, Sleepy)
    cases = [Case("ok", "json_schema", {}, ["ab"]), Case("slow", "json_schema", {}, ["x"]),
             Case("bad", "json_schema", {}, ["x"]), Case("again", "json_schema", {}, ["abc", "d"])]
    try:
        got = run_isolated([worker], cases, TOK, timeout=1.5)
    finally:
        worker.close()
    assert [r.case for r in got] == ["ok", "slow", "bad", "again"]
    assert got[0].error is None and got[0].accepted == 1 and len(got[0].mask_us) == 2
    assert got[1].error is not None and got[1].error.startswith("timeout")
    assert got[2].error == "RuntimeError: refused"
    assert got[3].error is None and got[3].accepted == 2
    assert got[3].mask_at == [(0, 1), (0, 2), (0, 3), (1, 1)]
    assert worker.restarts == 1


def test_common_cases_and_worst_masks() -> None:
    cases = {"c:one": Case("c:one", "json_schema", {}, ["abcd"]),
             "c:two": Case("c:two", "json_schema", {}, ["xy"])}
    results = [
        CaseResult("a", "c:one", 1.0, [5.0, 900.0, 7.0], [(0, 1), (0, 2), (0, 3)]),
        CaseResult("b", "c:one", 1.0, [3.0], [(0, 1)]),
        CaseResult("a", "c:two", 1.0, [10_000.0], [(0, 1)]),
        CaseResult("b", "c:two", error="refused"),
    ]
    assert common_cases(results) == {"c:one"}
    rows = worst_masks(results, cases, TOK, {"c:one"})[2:]
    assert rows[0] == "| a | `one` | 0 | 2 | `ab` | 900 |"
    assert len(rows) == 4 and rows[-1].startswith("| b | `one` | 0 | 1 | `a` |")
    everywhere = worst_masks(results, cases, TOK, None)[2:]
    assert everywhere[0] == "| a | `two` | 0 | 1 | `x` | 10,000 |"
