"""Compile-time budgets: automaton sizes, and time measured as the compile's own work.

Time is the compiling thread's CPU time (`time.thread_time`; the C loops read
`CLOCK_THREAD_CPUTIME_ID`, see `_clock.h`), so a compile whose thread is starved of the GIL (a
Triton JIT on the main thread, other compiles) is not failed for time it never ran.  Every loop of
the compiler checks the budget, the cheap ones through `tick` (the clock is read every
`CHECK_EVERY` ticks), so a compile stops within a few milliseconds of CPU past `max_seconds`: on
an idle machine, where CPU time is wall time, it returns within 1.1x its budget.

A wall-clock backstop, `backstop_seconds` = max(`WALL_FACTOR` x max_seconds, max_seconds +
`WALL_SLACK_S`), still bounds a compile that makes no progress at all (blocked, not computing); it
is far enough out that a starved but progressing compile is not failed (a thread given a tenth of a
core on an oversubscribed box, or the gaps of a JIT holding the GIL), and it is not what the 1.1x
target measures.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from formwork.grammar.errors import GrammarBudgetError

CHECK_EVERY = 64     # `tick`s between clock reads (a thread-CPU read costs ~1 us) in small-step loops
COARSE_EVERY = 7     # ... in the lowering's, whose steps are larger (`check_budget`; odd: callers that alternate all get checked)
WALL_FACTOR = 30.0   # the wall-clock backstop: this many budgets ...
WALL_SLACK_S = 60.0  # ... or the budget plus this, whichever is later

_ACTIVE = threading.local()  # .budget: the budget of the compile running on this thread


class CompileCancelledError(GrammarBudgetError):
    """The compile was cancelled (its request was aborted or its client went away)."""


@dataclass
class CompileBudget:
    """Limits for one grammar compilation; exceeding one raises GrammarBudgetError.

    `cpu_clock` and `wall_clock` are injectable (tests use fake clocks).  A budget times one
    compile: `start` (idempotent) starts its clocks; `fresh` makes an unstarted copy."""

    max_nfa_states: int = 500_000
    max_dfa_states: int = 100_000
    max_seconds: float = 10.0
    cpu_clock: Callable[[], float] = field(default=time.thread_time, repr=False)
    wall_clock: Callable[[], float] = field(default=time.perf_counter, repr=False)
    _started: bool = field(default=False, init=False, repr=False)
    _thread: int = field(default=0, init=False, repr=False)
    _cpu_start: float = field(default=0.0, init=False, repr=False)
    _wall_start: float = field(default=0.0, init=False, repr=False)
    _ticks: int = field(default=CHECK_EVERY, init=False, repr=False)
    _cancelled: bool = field(default=False, init=False, repr=False)

    def fresh(self) -> "CompileBudget":
        """An unstarted copy with the same limits and clocks (one per compilation)."""
        return CompileBudget(self.max_nfa_states, self.max_dfa_states, self.max_seconds,
                             self.cpu_clock, self.wall_clock)

    def start(self) -> "CompileBudget":
        """Start the clocks (on the compiling thread) unless already started."""
        if not self._started:
            self._thread = threading.get_ident()
            self._cpu_start, self._wall_start = self.cpu_clock(), self.wall_clock()
            self._started = True
        return self

    @property
    def backstop_seconds(self) -> float:
        """Wall seconds after which a compile fails however little CPU it had."""
        return max(WALL_FACTOR * self.max_seconds, self.max_seconds + WALL_SLACK_S)

    def cancel(self) -> None:
        """Make the compile stop at its next check (`CompileCancelledError`); thread-safe."""
        self._cancelled = True

    def _real_clocks(self) -> bool:
        """Whether the clocks are the process's own (not a test's fakes)."""
        return self.cpu_clock is time.thread_time and self.wall_clock is time.perf_counter

    def elapsed(self) -> float:
        """Seconds of the compile's own work: its thread's CPU time (wall time when read from
        another thread, whose CPU clock says nothing about this compile); 0 before `start`."""
        if not self._started:
            return 0.0
        if self.cpu_clock is time.thread_time and threading.get_ident() != self._thread:
            return self.wall_clock() - self._wall_start
        return self.cpu_clock() - self._cpu_start

    def seconds_left(self) -> float | None:
        """CPU seconds the native loops may still run (0 once past the budget, the backstop or a
        cancel); None before `start` (no deadline)."""
        if not self._started:
            return None
        if self._cancelled:
            return 0.0
        wall_left = self.backstop_seconds - (self.wall_clock() - self._wall_start)
        return max(0.0, min(self.max_seconds - self.elapsed(), wall_left))

    def native_seconds(self) -> float | None:
        """`seconds_left` for a native loop that reads this thread's CPU clock itself and calls
        `check_time` past that and every so often (a cancel): None where it cannot keep this
        budget's time (a test's fake clocks, or not started), and must call `check_time` at every
        check."""
        return self.seconds_left() if self._real_clocks() else None

    def check_time(self, what: str) -> None:
        """Raise if the compile is cancelled or past its time budget or the wall backstop."""
        if not self._started:
            return
        if self._cancelled:
            raise CompileCancelledError(f"grammar compilation was cancelled during {what}")
        wall = self.wall_clock() - self._wall_start
        # a thread's CPU time grows no faster than wall time: within the budget on the wall
        # clock, the CPU clock (a system call, unlike the wall clock) need not be read
        if (wall > self.max_seconds or not self._real_clocks()) and self.elapsed() > self.max_seconds:
            raise GrammarBudgetError(
                f"grammar compilation exceeded its time budget of {self.max_seconds:g} s during {what}")
        if wall > self.backstop_seconds:
            raise GrammarBudgetError(
                f"grammar compilation made too little progress: {wall:.0f} s of wall time (budget "
                f"{self.max_seconds:g} s of its own CPU time) during {what}")

    def out_of_time(self, what: str) -> None:
        """Raise as `check_time` does, for a native loop that stopped at its deadline (its clock
        may be a hair ahead of this one's)."""
        self.check_time(what)
        raise GrammarBudgetError(
            f"grammar compilation exceeded its time budget of {self.max_seconds:g} s during {what}")

    def tick(self, what: str, every: int = CHECK_EVERY) -> None:
        """`check_time` every `every` calls: for loops whose steps are small."""
        self._ticks -= 1
        if self._ticks <= 0:
            self._ticks = every
            self.check_time(what)

    @contextmanager
    def active(self) -> Iterator["CompileBudget"]:
        """Make this the budget that `check_budget` checks on this thread, meanwhile."""
        previous = getattr(_ACTIVE, "budget", None)
        _ACTIVE.budget = self.start()
        try:
            yield self
        finally:
            _ACTIVE.budget = previous

    def check_nfa(self, num_states: int) -> None:
        if num_states > self.max_nfa_states:
            raise GrammarBudgetError(
                f"grammar needs more than {self.max_nfa_states} NFA states (budget max_nfa_states); "
                "large bounded repetitions are the usual cause")

    def check_dfa(self, num_states: int, what: str) -> None:
        if num_states > self.max_dfa_states:
            raise GrammarBudgetError(
                f"{what} needs more than {self.max_dfa_states} DFA states (budget max_dfa_states)")


def active_budget() -> CompileBudget | None:
    """The budget of the compile running on this thread (see `CompileBudget.active`), if any."""
    return getattr(_ACTIVE, "budget", None)


def check_budget(what: str) -> None:
    """`tick` the budget of the compile running on this thread; for loops (schema lowering,
    `$ref` expansion) that are not handed a budget.  A no-op outside a compile."""
    budget = getattr(_ACTIVE, "budget", None)
    if budget is not None:
        budget.tick(what, COARSE_EVERY)
