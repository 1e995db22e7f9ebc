"""Analyse the regions of a regular schema's unique arrays at compile time (`uniqueItems`).

The first mask inside a unique array would otherwise pay its region's analysis
(`unique_regions.Regions`).  For a regular schema whose tagged automaton is small, compiling
walks the whole automaton once, finds every state where a unique array opens (a move on `TAG`
then ``[``) and analyses each such region; a larger automaton (more than `MAX_STATES` states) is
left to the matcher, which analyses a region when it first enters it.
"""
from __future__ import annotations

from typing import Any

from formwork.grammar.dfa import DEAD, START
from formwork.grammar.unique_scan import TAG

MAX_STATES = 256  # tagged automaton states walked at compile time, at most
_BRACKET = 0x5B
ROOT_STATE = ("V", ("A0",), None)  # the scanner state relative to an array just opened


def region_roots(dfa: Any, max_states: int = MAX_STATES) -> list[int] | None:
    """The states right after each unique array's ``[`` in `dfa` (the tagged automaton), or
    None when it has more than `max_states` reachable states."""
    class_of_byte = dfa.byte_classes()[0]
    tag, bracket = int(class_of_byte[TAG]), int(class_of_byte[_BRACKET])
    seen, todo, roots = {START}, [START], set()
    while todo:
        dfa.ensure(todo)
        rows = dfa.byte_classes()[1]
        later = []
        for s in todo:
            row = rows[s]
            for t in set(row.tolist()):
                if t != DEAD and t not in seen:
                    seen.add(t)
                    later.append(t)
            if int(row[tag]) != DEAD:
                after = int(dfa.class_row(int(row[tag]))[bracket])
                if after != DEAD:
                    roots.add(after)
        if len(seen) > max_states:
            return None
        todo = later
    return sorted(roots)


def prepare_regions(unique: Any, max_states: int = MAX_STATES) -> int:
    """Analyse every region of `unique` (`UniqueArrays` of a regular schema) now; the number of
    regions analysed (0 when the automaton is past `max_states`)."""
    roots = region_roots(unique.moves.dfa, max_states)
    for t in roots or ():
        unique.regions.good((t, ROOT_STATE), True)
    return len(roots or ())
