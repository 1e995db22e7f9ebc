"""A budget on the process's clocks reads the thread-CPU clock (a system call) only when the wall
clock says the compile could be past its budget; it still stops a compile past its CPU budget."""

from __future__ import annotations

import time
import types

import pytest

from formwork.grammar import CompileBudget, GrammarBudgetError
from formwork.grammar import budget as budget_module


@pytest.fixture
def counted_cpu_clock(monkeypatch):
    """The budget module's `time.thread_time`, counting its reads (the real clock underneath)."""
    reads = [0]

    def thread_time() -> float:
        reads[0] += 1
        return time.thread_time()

    monkeypatch.setattr(budget_module, "time", types.SimpleNamespace(
        thread_time=thread_time, perf_counter=time.perf_counter))
    return thread_time, reads


def test_checks_within_the_wall_budget_do_not_read_the_cpu_clock(counted_cpu_clock):
    clock, reads = counted_cpu_clock
    budget = CompileBudget(max_seconds=60.0, cpu_clock=clock, wall_clock=time.perf_counter).start()
    assert reads[0] == 1  # the start
    for _ in range(1000):
        budget.check_time("a loop")
    assert reads[0] == 1


def test_a_check_past_the_wall_budget_reads_the_cpu_clock(counted_cpu_clock):
    clock, reads = counted_cpu_clock
    budget = CompileBudget(max_seconds=0.001, cpu_clock=clock, wall_clock=time.perf_counter).start()
    time.sleep(0.01)  # wall time passes, CPU time (almost) does not: not past the CPU budget
    budget.check_time("a loop")
    assert reads[0] == 2


def test_a_compile_past_its_cpu_budget_still_stops():
    budget = CompileBudget(max_seconds=0.02).start()
    start = time.thread_time()
    with pytest.raises(GrammarBudgetError, match="exceeded its time budget of 0.02 s during a loop"):
        while time.thread_time() - start < 5.0:
            sum(range(1000))
            budget.check_time("a loop")
    assert time.thread_time() - start >= 0.02


def test_fresh_copies_limits_and_clocks_unstarted():
    def cpu() -> float:
        return 1.0

    def wall() -> float:
        return 2.0

    budget = CompileBudget(max_nfa_states=7, max_dfa_states=8, max_seconds=9.0, cpu_clock=cpu,
                           wall_clock=wall).start()
    copy = budget.fresh()
    assert (copy.max_nfa_states, copy.max_dfa_states, copy.max_seconds) == (7, 8, 9.0)
    assert copy.cpu_clock is cpu and copy.wall_clock is wall
    assert copy.seconds_left() is None and budget.seconds_left() == 9.0
