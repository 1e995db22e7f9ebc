"""Context-free constraints: EBNF (Lark, GBNF) front ends and an Earley parser over terminal DFAs.

Pipeline: text -> IR `Grammar` (`lark_frontend`, `gbnf`; JSON Schema `$ref` cycles come from
`json_schema`) -> context-free productions whose terminals are the maximal regular pieces
(`productions`) -> Earley sets hash-consed by their unfinished items (`earley`) -> a lazily built
byte automaton over (Earley set, terminal, terminal DFA state) hypotheses (`configs`), so `Matcher`,
rollback and jump-forward work unchanged -> token masks split at terminal boundaries (`masks`).

Language: each terminal stands for its regular language and the text may be split into terminals
anywhere (lark's `dynamic_complete` Earley semantics; no longest-match lexing), with `%ignore`d
terminals allowed between any two symbols.  Left recursion, ambiguity and nullable rules are fine.
A grammar that derives no finite string is an `EmptyLanguageError` at compile time.  Budgets:
Earley set size (`max_items`), live hypotheses (`max_hypotheses`), expansion of bounded
repetitions, and the matcher's per-step time for masks.
"""
from formwork.grammar.cfg.automaton import compile_automaton, compile_cfg, is_recursive
from formwork.grammar.cfg.productions import EmptyLanguageError

__all__ = ["EmptyLanguageError", "compile_automaton", "compile_cfg", "is_recursive"]
