"""A lexeme automaton built by the long-lived shared builder builds its pieces (products,
complements) under its own fresh budget, not the shared builder's, whose clock started when the
process made it: once that clock passed 10 s, every new lexeme with a product failed."""
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.ir import And, Not
from formwork.grammar.regex_parser import regex


def test_a_new_lexeme_builds_after_the_shared_builders_clock_ran_out():
    now = [0.0]
    builder = AutomatonBuilder(CompileBudget(cpu_clock=lambda: now[0], wall_clock=lambda: now[0]))
    now[0] = 1_000.0  # the shared builder has lived long past any one budget
    lexeme = builder.lexeme_automaton(And(regex("[a-z]+"), Not(regex("ab.*"))))
    assert lexeme.accepts(b"ba") and not lexeme.accepts(b"abc")
