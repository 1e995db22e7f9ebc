"""Compile-time budgets: automaton sizes and wall-clock time."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from formwork.grammar.errors import GrammarBudgetError


@dataclass
class CompileBudget:
    """Limits for one grammar compilation; exceeding one raises GrammarBudgetError."""

    max_nfa_states: int = 500_000
    max_dfa_states: int = 100_000
    max_seconds: float = 10.0
    _deadline: float = field(default=0.0, init=False, repr=False)

    def start(self) -> "CompileBudget":
        self._deadline = time.perf_counter() + self.max_seconds
        return self

    def seconds_left(self) -> float | None:
        """Seconds until the deadline (0 once past it); None before `start` (no deadline)."""
        return max(0.0, self._deadline - time.perf_counter()) if self._deadline else None

    def check_time(self, what: str) -> None:
        if self._deadline and time.perf_counter() > self._deadline:
            raise GrammarBudgetError(
                f"grammar compilation exceeded its time budget of {self.max_seconds:g} s during {what}")

    def check_nfa(self, num_states: int) -> None:
        if num_states > self.max_nfa_states:
            raise GrammarBudgetError(
                f"grammar needs more than {self.max_nfa_states} NFA states (budget max_nfa_states); "
                "large bounded repetitions are the usual cause")

    def check_dfa(self, num_states: int, what: str) -> None:
        if num_states > self.max_dfa_states:
            raise GrammarBudgetError(
                f"{what} needs more than {self.max_dfa_states} DFA states (budget max_dfa_states)")
