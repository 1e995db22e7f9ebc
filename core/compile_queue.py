"""Compiling constraints off the engine thread, side by side.

A small pool of workers compiles the constraints of new requests, so no request's compile waits
behind another's (a schema that runs to its budget holds one worker, not the queue).  Each compile
has its own `CompileBudget`; cancelling a job (its request was aborted, or its client went away)
drops it if it has not started and otherwise stops it at its next budget check.  `status` is what
`/health` reports.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from formwork.grammar import CompileBudget, CompiledGrammar

# compiles are mostly Python (they share the GIL with the engine thread): a few workers are enough
# to keep a slow compile from blocking the others, more would only slow the engine down
DEFAULT_WORKERS = min(4, max(2, os.cpu_count() or 2))
STUCK_GRACE_S = 5.0  # a compile this long past its wall backstop has stopped checking its budget


@dataclass
class CompileJob:
    """One request's compile: its future and its budget."""

    future: Future
    budget: CompileBudget

    def cancel(self) -> None:
        """Stop waiting: a queued job is dropped, a running one stops at its next budget check."""
        self.future.cancel()
        self.budget.cancel()


class CompileQueue:
    """A pool of `workers` threads running `compile(spec, budget)` with a fresh budget of
    `max_seconds` per job."""

    def __init__(self, compile: Callable[[dict[str, Any], CompileBudget], CompiledGrammar],
                 max_seconds: float, workers: int = DEFAULT_WORKERS):
        if workers < 1:
            raise ValueError(f"compile workers must be at least 1, got {workers}")
        self.compile = compile
        self.max_seconds = max_seconds
        self.workers = workers
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="formwork-grammar")
        self._lock = threading.Lock()
        self._queued = 0

    def submit(self, spec: dict[str, Any]) -> CompileJob:
        budget = CompileBudget(max_seconds=self.max_seconds)
        with self._lock:
            self._queued += 1
        future = self._executor.submit(self._run, spec, budget)
        job = CompileJob(future, budget)
        future.add_done_callback(self._dropped)
        return job

    def _run(self, spec: dict[str, Any], budget: CompileBudget) -> CompiledGrammar:
        with self._lock:
            self._queued -= 1
        return self.compile(spec, budget)

    def _dropped(self, future: Future) -> None:
        if future.cancelled():  # cancelled before it ran: `_run` never counted it out
            with self._lock:
                self._queued -= 1

    def status(self, running: Iterable[tuple[CompileBudget, float]]) -> dict[str, Any]:
        """The queue for `/health`: jobs queued, compiles `running` ((budget, monotonic start) of
        each, from every caller of the backend), the oldest one's age, how many are stuck (past
        their wall backstop by `STUCK_GRACE_S`: no longer checking their budget), and `healthy`:
        False once stuck compiles are as many as the workers, when no new compile can progress."""
        now = time.monotonic()
        ages = [(now - started, budget) for budget, started in running]
        stuck = sum(age > budget.backstop_seconds + STUCK_GRACE_S for age, budget in ages)
        with self._lock:
            queued = self._queued
        return {"workers": self.workers, "queued": queued, "running": len(ages),
                "oldest_running_s": round(max((age for age, _ in ages), default=0.0), 3),
                "stuck": stuck, "healthy": stuck < self.workers}

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
