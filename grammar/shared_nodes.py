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
from collections.abc import Callable, Sequence

from formwork.grammar._nfa_build import member_cells, share_in
from formwork.grammar.ir import Empty, Node, Nothing

_MAX_MARKS = 1 << 16  # a mark evicted before its compile only costs size: the language is the same
_SHARED: dict[Node, Node] = {}  # each mark to itself: the table the NFA builder reads
_MARK_OF: OrderedDict[Node, Node] = OrderedDict()  # each marked node to its mark, oldest use first
_SHARED_LOCK = threading.Lock()
_evictions = 0  # eviction rounds so far (see `evictions`)


def share(node: Node) -> Node:
    """`node`'s language, marked to be built once per end state (see the module docstring).

    Marks are interned: an equal mark made before is returned instead.  A shared node is reached
    by many paths, and so is what it holds: comparing two equal copies of such a graph node by
    node would take as many steps as there are paths.  Made bottom-up, a new mark holds the
    interned marks below it, which compare by identity, so finding it costs about its own size.
    The marks are found by the node they mark, so a known one costs no new mark.  The tables'
    work is `share_in`'s, in C (a lowering marks every cell of an object's member list): the
    lookup, a found mark moved to the end (by its stored key), or a new `Repeat(node, 1, 1)`,
    its hash cached (both tables key it at once), recorded in both."""
    if isinstance(node, (Empty, Nothing)):
        return node
    with _SHARED_LOCK:
        marked = share_in(node, _MARK_OF, _SHARED)
        if len(_MARK_OF) > _MAX_MARKS:
            _evict_oldest_quarter()
    return marked


def _evict_oldest_quarter() -> None:
    """Drop the marks used longest ago, a quarter of the table at once: one eviction round, so IR
    kept across compiles (`ref_lowerings`) is given up once a round, not at each new mark of a
    full table, which a long-running process fills (the lock held)."""
    global _evictions
    keep = _MAX_MARKS - max(1, _MAX_MARKS // 4)
    while len(_MARK_OF) > keep:
        del _SHARED[_MARK_OF.popitem(last=False)[1]]
    _evictions += 1


def share_member_cells(root: tuple[int, int, bool], members: Sequence[tuple[Node, bool]],
                       memo: dict[tuple[int, int, bool], Node], marks: list[Node], comma: Node, cap: int,
                       share_takes: bool, end_cell: Callable[[int, bool], Node]) -> Node:
    """The cells of an object's member list from `root` on, each marked as `share` marks it
    (`objects._MemberChain.rest`, whose loop this is, in C: `_nfa_build.member_cells`)."""
    return member_cells(root, members, memo, marks, comma, cap, share_takes, end_cell,
                        _MARK_OF, _SHARED, _SHARED_LOCK, _evict_oldest_quarter, _MAX_MARKS)


def evictions() -> int:
    """How many eviction rounds there were so far: IR kept across compiles is as built while this
    count is what it was then."""
    return _evictions



def renew(marks: Sequence[Node]) -> bool:
    """Whether every mark in `marks` is still live (the mark of its node); each one found is
    renewed as a `share` that found it would renew it."""
    with _SHARED_LOCK:
        for mark in marks:
            node = mark.item
            if _MARK_OF.get(node) is not mark:
                return False
            _MARK_OF.move_to_end(node)
    return True


def is_shared(node: Node) -> bool:
    return node in _SHARED


def shared_marks() -> dict[Node, Node]:
    """The live table of marks that the NFA builder (in C) reads; do not modify it but through
    `share`."""
    return _SHARED
