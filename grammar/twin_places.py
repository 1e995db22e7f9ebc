"""The place in a lexeme's boundary twin (`lexemes.lexeme(..., twin=)`) with the same tokens inside.

A lexeme with a twin and the twin are canonical string contents after any prefix that ends
between two characters, so such a state keeps the tokens inside that the twin's start keeps.
Inside a UTF-8 character they keep the tokens that finish the character and go on as contents:
what remains of a character is fixed by the range of its next byte and how many bytes follow
(only a character's second byte has a range of its own; every later one is 0x80-0xBF), which
the next bytes along the lowest allowed byte tell.  Mid-escape states have no twin place here
(an escape's rest depends on more than its next bytes): they walk their own masks.
"""
from __future__ import annotations

import weakref
from typing import Any

from formwork.grammar.dfa import DEAD, START
from formwork.grammar.lazy_dfa import LazyDFA

_UTF8_LEADS = range(0xC2, 0xF5)
_MAX_REST = 3  # continuation bytes a UTF-8 character may still need
# twin automaton -> {next bytes at each byte of a character's rest: the twin's state there}
_PLACES: "weakref.WeakKeyDictionary[LazyDFA, dict[tuple[bytes, ...], int]]" = weakref.WeakKeyDictionary()


def twin_place(dfa: LazyDFA, state: int, twin: LazyDFA) -> int | None:
    """The twin's state whose tokens inside equal `state`'s (its start between two characters),
    or None (mid-escape, or not a state of contents at all)."""
    boundary = twin.live_bytes(START)
    if dfa.live_bytes(state) == boundary:
        return START
    rest = _utf8_rest(dfa, state, boundary)
    if rest is None:
        return None
    places = _PLACES.get(twin)
    if places is None:
        places = _PLACES[twin] = _twin_places(twin, boundary)
    return places.get(rest)


def warm_twin_places(cache: Any, twin: LazyDFA) -> None:
    """Find `twin`'s places now and compute their masks (`cache.lexeme_base`, pinned), once per process
    (`GrammarCompiler.prepare`): else the first key inside a UTF-8 character pays ~0.5 ms."""
    places = _PLACES.get(twin)
    if places is None:
        places = _PLACES[twin] = _twin_places(twin, twin.live_bytes(START))
    for state in places.values():
        cache.lexeme_base(twin, state, pin=True)


def _utf8_rest(dfa: LazyDFA, state: int, boundary: bytes) -> tuple[bytes, ...] | None:
    """The next bytes at each byte of the rest of the UTF-8 character `state` is inside, along the
    lowest allowed byte, ending between two characters; None if `state` is not inside one."""
    rest = []
    for _ in range(_MAX_REST):
        live = dfa.live_bytes(state)
        if not live or live[0] < 0x80 or live[-1] > 0xBF:
            return None
        rest.append(live)
        state = dfa.walk(state, live[:1])
        if state != DEAD and dfa.live_bytes(state) == boundary:
            return tuple(rest)
    return None


def _twin_places(twin: LazyDFA, boundary: bytes) -> dict[tuple[bytes, ...], int]:
    """Every state of the twin inside a UTF-8 character (after each lead byte and along its lowest
    continuation bytes), by `_utf8_rest`."""
    places: dict[tuple[bytes, ...], int] = {}
    for lead in _UTF8_LEADS:
        state = twin.walk(START, bytes((lead,)))
        while state != DEAD:
            rest = _utf8_rest(twin, state, boundary)
            if rest is None:
                break
            places.setdefault(rest, state)
            state = twin.walk(state, rest[0][:1])
    return places
