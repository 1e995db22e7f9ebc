"""``uniqueItems`` over unbounded items in a recursive schema: unique arrays as regular islands.

A recursive schema lowers to a `Grammar` whose automaton is the Earley configuration automaton
(`formwork.grammar.cfg.configs`): a byte DFA, infinite but built on demand.  Where a unique array's
items reach no rule cycle, the array is regular and lies inside one terminal of the context-free
grammar (a terminal is a maximal run of IR without rule references), so while the matcher reads it
the configurations change only in that terminal's state: the region the tracker analyses
(`unique_regions`) is as finite as in a regular schema.  The tracker then walks the configuration
automaton of the *tagged* grammar beside the matcher's, exactly as it walks the tagged DFA of a
regular schema, following both readings where one `[` may open a unique array or another one.
Refused, naming the ``uniqueItems`` pointer: an array whose items recurse (its region would cross
terminal boundaries without end).
"""
from __future__ import annotations

from typing import Optional

from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg.productions import References, recursive_rules
from formwork.grammar.ir import Grammar, Node


def recursive_array(grammar: Grammar, pointers: tuple[str, ...], arrays: tuple[Node, ...],
                    budget: CompileBudget) -> Optional[str]:
    """The pointer of the first unique array (`arrays[i]` at `pointers[i]`) whose items refer to a
    rule that reaches a reference cycle, or None."""
    references = References(budget)
    recursive = recursive_rules(grammar, budget, references)
    for pointer, array in zip(pointers, arrays):
        if references(array) & recursive:
            return pointer
    return None
