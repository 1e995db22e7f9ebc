"""The C NFA builder keeps the budget's time itself between regions (`_nfa_moves.c`): it calls the
budget back past the deadline, every few dozen regions (a cancel from elsewhere), and at every
region where it cannot read the budget's clocks (fake ones); a many-region build still stops."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget, CompileCancelledError
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import Node, Repeat, lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.lexemes import _LEXEMES, _LEXEMES_LOCK, lexeme
from formwork.grammar.nfa import NFA

REGIONS = 400  # spliced lexemes in the document below: many more than the builder's CALL_EVERY (64)


@contextmanager
def _many_regions() -> Iterator[Node]:
    """A document splicing one lexeme REGIONS times, the lexeme marked meanwhile."""
    word = Repeat(chars([("a", "z")]), 1, None)
    lexeme(word)
    try:
        yield seq(*[x for _ in range(REGIONS) for x in (word, lit(","))])
    finally:
        with _LEXEMES_LOCK:
            _LEXEMES.pop(word, None)


def _templates(builder: AutomatonBuilder, after: Callable[[int], None]) -> tuple[Callable, list[int]]:
    """`builder.lexeme_template`, calling `after(k)` after its k-th call (from 1); and the count."""
    calls = [0]

    def template_of(node: Node):
        got = builder.lexeme_template(node)
        calls[0] += 1
        after(calls[0])
        return got

    return template_of, calls


def test_a_many_region_build_within_its_budget_checks_it_rarely() -> None:
    builder = AutomatonBuilder()
    budget = CompileBudget().start()
    checks = [0]
    check_time = budget.check_time

    def counted(what: str) -> None:
        checks[0] += 1
        check_time(what)

    budget.check_time = counted  # type: ignore[method-assign]
    with _many_regions() as node:
        template_of, calls = _templates(builder, lambda k: None)
        nfa = NFA(node, budget, builder.eager, template_of)
    assert calls[0] == REGIONS and len(nfa.region_tuples) == REGIONS
    assert 0 < checks[0] <= REGIONS // 32  # every 64 regions, not at each


def test_a_cancel_during_a_many_region_build_stops_it_within_64_regions() -> None:
    builder = AutomatonBuilder()
    budget = CompileBudget().start()
    with _many_regions() as node:
        template_of, calls = _templates(builder, lambda k: budget.cancel() if k == 10 else None)
        with pytest.raises(CompileCancelledError, match="during NFA construction"):
            NFA(node, budget, builder.eager, template_of)
    assert 10 <= calls[0] <= 10 + 64


def _spend_cpu(seconds: float) -> None:
    """Use `seconds` of this thread's CPU time (work the budget's CPU clock counts)."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        sum(range(1000))


def _stopped_at_callback(budget: CompileBudget, spend: Callable[[], None], at: int, message: str) -> None:
    """Build the many-region NFA, with `spend` run in the `at`-th template callback: the build stops
    with `message` at the next region, so after exactly `at` callbacks."""
    builder = AutomatonBuilder()
    with _many_regions() as node:
        template_of, calls = _templates(builder, lambda k: spend() if k == at else None)
        with pytest.raises(GrammarBudgetError, match=message):
            NFA(node, budget, builder.eager, template_of)
    assert calls[0] == at


def test_a_budget_spent_during_a_many_region_build_stops_it_at_the_next_region() -> None:
    # the compile's own CPU time runs out in the 5th callback
    _stopped_at_callback(CompileBudget(max_seconds=0.05).start(), lambda: _spend_cpu(0.06), 5,
                         "time budget of 0.05 s during NFA construction")


def test_a_budget_on_fake_clocks_is_checked_at_every_region() -> None:
    now = [0.0]
    budget = CompileBudget(max_seconds=1.0, cpu_clock=lambda: now[0], wall_clock=lambda: now[0]).start()
    _stopped_at_callback(budget, lambda: now.__setitem__(0, 2.0), 3, "time budget of 1 s during NFA construction")


def test_an_unstarted_budget_is_never_out_of_time() -> None:
    builder = AutomatonBuilder()
    with _many_regions() as node:
        nfa = NFA(node, CompileBudget(max_seconds=0.0), builder.eager, builder.lexeme_template)
    assert len(nfa.region_tuples) == REGIONS


@pytest.mark.parametrize("limit", [1, 10, 2 ** 70, 30.5])
def test_the_state_budget_is_kept_at_any_limit(limit: int | float) -> None:
    """max_nfa_states is compared in C where it is a 64-bit int, else by `check_nfa` at each check:
    the same refusals either way."""
    node = lit("x" * 5000)
    budget = CompileBudget(max_nfa_states=limit).start()  # type: ignore[arg-type]
    if limit > 5001:
        assert NFA(node, budget, AutomatonBuilder().eager).num_states == 5001
    else:
        with pytest.raises(GrammarBudgetError, match="max_nfa_states"):
            NFA(node, budget, AutomatonBuilder().eager)


def test_a_build_without_regions_calls_the_budget_back_only_past_its_limits() -> None:
    """Copies of a repetition check the state count, in C: the budget is not called back (its
    clocks are read only at a check with time: a region, or every 4096 new states)."""
    budget = CompileBudget().start()
    calls: list[str] = []
    for name in ("check_nfa", "check_time", "native_seconds"):
        method = getattr(budget, name)
        setattr(budget, name, lambda *args, name=name, method=method: calls.append(name) or method(*args))
    nfa = NFA(repeat(lit("ab"), 0, 200), budget, AutomatonBuilder().eager)
    assert nfa.num_states > 400 and calls == []
    budget.max_nfa_states = 100
    with pytest.raises(GrammarBudgetError, match="max_nfa_states"):
        NFA(repeat(lit("ab"), 0, 200), budget, AutomatonBuilder().eager)
    assert calls == ["check_nfa"]
