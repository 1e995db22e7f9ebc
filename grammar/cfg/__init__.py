"""Context-free constraints: EBNF (Lark, GBNF) front ends and an Earley parser over terminal DFAs.

`compile_cfg(grammar)` turns an IR `Grammar` with recursive rules into a lazily built byte
automaton (see `configs`), so `Matcher` and the token-mask cache serve it unchanged.
"""
from formwork.grammar.cfg.automaton import compile_automaton, compile_cfg, is_recursive
from formwork.grammar.cfg.productions import EmptyLanguageError

__all__ = ["EmptyLanguageError", "compile_automaton", "compile_cfg", "is_recursive"]
