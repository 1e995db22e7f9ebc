"""``uniqueItems`` over unbounded items in a recursive schema: unique arrays as regular islands.

A recursive schema lowers to a `Grammar` whose automaton is the Earley configuration automaton
(`formwork.grammar.cfg.configs`): a byte DFA, infinite but built on demand.  Where a unique array's
items reach no rule cycle, the array is regular and lies inside one terminal of the context-free
grammar (a terminal is a maximal run of IR without rule references), so while the matcher reads it
the configurations change only in that terminal's state: the region the tracker analyses
(`unique_regions`) is as finite as in a regular schema.  The tracker then walks the configuration
automaton of the *tagged* grammar beside the matcher's, exactly as it walks the tagged DFA of a
regular schema.  Refused, naming the ``uniqueItems`` pointer: an array whose items recurse (its
region would cross terminal boundaries without end), and a place where one `[` may open a unique
array or another one (`ambiguous_configurations`).
"""
from __future__ import annotations

from typing import Any, Optional

from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg.configs import ConfigDFA, config_automaton
from formwork.grammar.cfg.productions import References, recursive_rules
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.ir import Grammar, Node
from formwork.grammar.unique_ambiguity import BRACKET, ambiguous
from formwork.grammar.unique_scan import TAG

#: configurations of the tagged automaton the ambiguity search visits (breadth first) past the
#: per-terminal check; the automaton is infinite, so the search is bounded
MAX_SEARCHED_CONFIGURATIONS = 1_000


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


def ambiguous_configurations(tagged: ConfigDFA, budget: CompileBudget) -> bool:
    """Whether one prefix of the tagged grammar may open a unique array or another one: some
    terminal has a state moving both on `TAG` and on ``[`` (exact: each terminal's own DFA is
    searched whole), or one of the first `MAX_SEARCHED_CONFIGURATIONS` configurations moves on
    both (two hypotheses of different terminals).  Past that bound a configuration that moves on
    both is read as opening the unique array (`TaggedMoves.next` prefers the tagged move): the
    matcher then refuses the other reading's documents, and never accepts a duplicate."""
    builder = tagged.builder
    for terminal in builder.terminals:
        if _has_tag(terminal) and ambiguous(terminal, budget):
            return True
    return _search(config_automaton(builder.parser, builder.terminals), budget)


def _has_tag(terminal: Any) -> bool:
    """Whether a terminal's DFA may move on `TAG`: else `TAG` shares the byte class of 0xFF, which
    no UTF-8 text holds (a pre-check that spares searching every terminal)."""
    class_of_byte, _ = terminal.byte_classes()
    return bool(class_of_byte[TAG] != class_of_byte[0xFF])


def _search(dfa: ConfigDFA, budget: CompileBudget) -> bool:
    """Breadth-first over the configurations from the start, up to the bound."""
    class_of_byte, _ = dfa.byte_classes()
    tag, bracket = int(class_of_byte[TAG]), int(class_of_byte[BRACKET])
    seen = {START}
    todo = [START]
    while todo and len(seen) < MAX_SEARCHED_CONFIGURATIONS:
        budget.check_time("the uniqueItems ambiguity check")
        later = []
        for s in todo:
            row = dfa.class_row(s)
            if row[tag] != DEAD and row[bracket] != DEAD:
                return True
            for nxt in set(row.tolist()) - seen - {DEAD}:
                seen.add(nxt)
                later.append(nxt)
        todo = later
    return False
