"""The compile queue: jobs run side by side up to its workers, queued ones are counted and can be
dropped, and its status turns unhealthy once stuck compiles are as many as the workers."""

from __future__ import annotations

import threading
import time

import pytest

from formwork.core.compile_queue import STUCK_GRACE_S, CompileQueue
from formwork.grammar import CompileBudget


def test_jobs_run_side_by_side_and_queued_ones_can_be_dropped():
    gate, started = threading.Event(), []

    def compile(spec, budget):
        started.append(spec["n"])
        gate.wait(30)
        return spec["n"]

    queue = CompileQueue(compile, max_seconds=1.0, workers=2)
    jobs = [queue.submit({"n": n}) for n in range(4)]
    deadline = time.monotonic() + 30
    while len(started) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert queue.status([])["queued"] == 2  # two run at once, two wait
    jobs[3].cancel()
    assert jobs[3].future.cancelled() and jobs[3].budget._cancelled
    assert queue.status([])["queued"] == 1
    gate.set()
    assert [job.future.result(30) for job in jobs[:3]] == [0, 1, 2]
    assert queue.status([])["queued"] == 0
    queue.shutdown()


def test_status_is_unhealthy_once_stuck_compiles_fill_the_workers():
    queue = CompileQueue(lambda spec, budget: None, max_seconds=1.0, workers=2)
    budget = CompileBudget(max_seconds=1.0)
    now = time.monotonic()
    stuck = (budget, now - budget.backstop_seconds - STUCK_GRACE_S - 1)
    fresh = (budget, now - 0.5)
    status = queue.status([stuck, fresh])
    assert status["running"] == 2 and status["stuck"] == 1 and status["healthy"]
    assert status["oldest_running_s"] == pytest.approx(now - stuck[1], abs=1.0)
    status = queue.status([stuck, stuck, fresh])
    assert status["stuck"] == 2 and not status["healthy"]
    queue.shutdown()


def test_at_least_one_worker():
    with pytest.raises(ValueError, match="at least 1"):
        CompileQueue(lambda spec, budget: None, max_seconds=1.0, workers=0)
