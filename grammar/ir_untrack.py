"""Compiled IR out of the cyclic garbage collector's reach.

Process-wide tables keep IR nodes alive across compiles (lexeme marks, shared marks, automaton
roots, the lowering's memos): after a few hundred schemas they are most of what a full collection
walks (IR nodes and the tuples of their items: 76% of the 134k tracked objects after 200 Iglu
compiles), and none of them can be cyclic garbage: nodes are immutable and built bottom-up, so they
are freed by reference counting when the last table lets go.  Once a schema is compiled its IR is
untracked (`_untrack.c`): the collector stops scanning it, and full collections cost what the
compiled grammars' other objects cost.
"""
from __future__ import annotations

from typing import TypeVar

from formwork.grammar._untrack import untrack_tree
from formwork.grammar.ir import Grammar, Node

T = TypeVar("T")


def untrack_ir(lowered: Node | Grammar) -> int:
    """Untrack `lowered`'s nodes and item tuples (a grammar's rule bodies); how many were tracked."""
    if isinstance(lowered, Grammar):
        return sum(untrack_tree(body, Node) for body in lowered.rules.values())
    return untrack_tree(lowered, Node)


def untracked_ir(value: T) -> T:
    """`value` (an IR node, or tuples of nodes and atoms) with its nodes and tuples untracked now:
    for the lowering's process-wide memos, whose entries the compiled grammar may not hold (an
    interned equal copy, a failed compile)."""
    untrack_tree(value, Node)
    return value


def untracked_tuples(value: T) -> T:
    """`value`, tuples nested in tuples down to atoms (ints, bytes), untracked now: the collector
    would untrack each level at its first look, the outer ones only at a later full collection."""
    untrack_tree(value, tuple)
    return value
