"""Shared suffixes: sub-languages the NFA builder builds once per state they lead to.

The NFA builder (`_nfa_build.c`) walks the IR as a tree: a node used in several places is built
once per use.  Where alternatives end with the same node (a suffix: every use leads on to the same
NFA state), a node marked with `share` is built once per end state and each further use is an
epsilon move into that build's entry state.  An object's member list in a fixed order, with
optional members and a count for minProperties/maxProperties (`json_schema/objects.py`), is a
grid of (next member, members so far) whose every cell many paths reach: built as a tree it grows
exponentially (or quadratically without a count); with its cells shared it grows linearly.

The mark is a `Repeat(node, 1, 1)` (the language of `node`) recorded in a table the C builder reads.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from formwork.grammar.ir import Empty, Node, Nothing, Repeat

_MAX_MARKS = 1 << 16  # a mark evicted before its compile only costs size: the language is the same
_SHARED: OrderedDict[Node, Node] = OrderedDict()  # each mark to itself (interned)
_SHARED_LOCK = threading.Lock()


def share(node: Node) -> Node:
    """`node`'s language, marked to be built once per end state (see the module docstring).

    Marks are interned: an equal mark made before is returned instead.  A shared node is reached
    by many paths, and so is what it holds: comparing two equal copies of such a graph node by
    node would take as many steps as there are paths.  Made bottom-up, a new mark holds the
    interned marks below it, which compare by identity, so finding it costs about its own size."""
    if isinstance(node, (Empty, Nothing)):
        return node
    marked = Repeat(node, 1, 1)
    with _SHARED_LOCK:
        got = _SHARED.get(marked)
        if got is not None:
            _SHARED.move_to_end(marked)
            return got
        _SHARED[marked] = marked
        if len(_SHARED) > _MAX_MARKS:
            _SHARED.popitem(last=False)
    return marked


def is_shared(node: Node) -> bool:
    return node in _SHARED


def shared_marks() -> "OrderedDict[Node, Node]":
    """The live table of marks that the NFA builder (in C) reads; do not modify it but through
    `share`."""
    return _SHARED
