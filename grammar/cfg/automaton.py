"""IR (regular or recursive) to a byte automaton: plain DFAs for regular input, the Earley
configuration automaton when rules refer to each other in cycles."""
from __future__ import annotations

from formwork.grammar.automaton import AutomatonBuilder, compile_dfa
from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg.configs import config_automaton
from formwork.grammar.cfg.earley import EarleyParser
from formwork.grammar.cfg.productions import lower_grammar, prune_unproductive, recursive_rules
from formwork.grammar.dfa import DFA, START
from formwork.grammar.ir import Grammar, Node
from formwork.grammar.lazy_dfa import LazyDFA


def is_recursive(grammar: Node | Grammar, budget: CompileBudget | None = None) -> bool:
    return isinstance(grammar, Grammar) and grammar.start in recursive_rules(grammar, budget)


def compile_cfg(grammar: Grammar, budget: CompileBudget | None = None,
                builder: AutomatonBuilder | None = None) -> LazyDFA:
    """The byte automaton of a grammar whose rules may be recursive (Earley over terminal DFAs).

    `builder` (default: a fresh one) compiles the terminals; a long-lived builder shares their
    DFAs, and so their cached token masks, with earlier compilations."""
    budget = (budget or CompileBudget()).start()
    cfg = lower_grammar(grammar, budget)
    if builder is None:
        builder = AutomatonBuilder(budget)
    builder.budget = budget
    terminals = [builder.dfa(node) for node in cfg.terminals]
    empty = {i for i, dfa in enumerate(terminals) if dfa.is_empty()}
    cfg = prune_unproductive(cfg, empty, budget)
    nullable = {i for i, dfa in enumerate(terminals) if i not in empty and dfa.accepting[START]}
    parser = EarleyParser(cfg, nullable, budget=budget)
    budget.check_time("building the Earley parser")
    return config_automaton(parser, terminals)


def compile_automaton(grammar: Node | Grammar, budget: CompileBudget | None = None) -> DFA | LazyDFA:
    """Byte automaton of any IR: a DFA when the language is regular, else the CFG automaton."""
    budget = (budget or CompileBudget()).start()
    if is_recursive(grammar, budget):
        return compile_cfg(grammar, budget)
    return compile_dfa(grammar, budget)
