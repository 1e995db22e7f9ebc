"""One worker process per engine, so that a compile that runs past its time can be killed.

Some peers take minutes on a single real-world schema (XGrammar: 125 s on SchemaStore's
bamboo-spec.json here) and their compiles cannot be interrupted in-process. Each engine lives in a
forked child; cases are sent one at a time (the engines never run at the same time), and a case
with no answer within `timeout` seconds has its worker killed and counts as an error ("timeout"),
the next case taking a spare worker started (in the background) right after the kill.
"""
from __future__ import annotations

import multiprocessing
import time
from typing import Any, Callable

from grammar_harness import Case, CaseResult, Engine, Tokenized, run_case


def _serve(make: Callable[[], Engine], tok: Tokenized, conn: Any) -> None:
    engine = make()
    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        case, token_lists = job
        conn.send(run_case(engine, case, tok, token_lists))


class EngineWorker:
    """A child process holding one engine (built there by `make`); `run` replays one case in it."""

    def __init__(self, name: str, tok: Tokenized, make: Callable[[], Engine]):
        self.name, self.tok, self.make = name, tok, make
        self.process: Any = None
        self.conn: Any = None
        self.spare: tuple[Any, Any] | None = None
        self.restarts = 0

    def _spawn(self) -> tuple[Any, Any]:
        ctx = multiprocessing.get_context("fork")
        conn, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(self.make, self.tok, child), daemon=True)
        process.start()
        return process, conn

    def _start(self) -> None:
        self.process, self.conn = self.spare or self._spawn()
        self.spare = None
        if not self.conn.poll(600) or self.conn.recv() != "ready":
            raise RuntimeError(f"{self.name} worker did not start")

    def run(self, case: Case, token_lists: list[list[int]], timeout: float) -> CaseResult:
        if self.process is None or not self.process.is_alive():
            self._start()
        self.conn.send((case, token_lists))
        if self.conn.poll(timeout):
            return self.conn.recv()
        self.process.kill()
        self.process.join()
        self.process = None
        self.restarts += 1
        self.spare = self._spawn()
        return CaseResult(self.name, case.name, instances=len(token_lists),
                          error=f"timeout: no result within {timeout:g} s (worker killed)")

    def close(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.conn.send(None)
            self.process.join(10)
        if self.spare is not None:
            self.spare[0].kill()
            self.spare[0].join()


def run_isolated(workers: list[EngineWorker], cases: list[Case], tok: Tokenized, timeout: float,
                 verbose: bool = False) -> list[CaseResult]:
    """Every case through every worker in turn, as `grammar_harness.run_cases` does in-process."""
    results = []
    start = time.perf_counter()
    for i, case in enumerate(cases):
        token_lists = [tok.encode(text) for text in case.instances]
        for worker in workers:
            r = worker.run(case, token_lists, timeout)
            results.append(r)
            if verbose:
                ttfm = f"{r.ttfm_ms:.2f}" if r.ttfm_ms is not None else "-"
                print(f"  {case.name:<40} {r.engine:<11} ttfm {ttfm:>9} ms  "
                      f"{r.error or f'{r.accepted}/{r.instances} accepted'}"[:160], flush=True)
        if not verbose and (i + 1) % 100 == 0:
            print(f"  {i + 1}/{len(cases)} schemas, {time.perf_counter() - start:.0f} s", flush=True)
    return results
