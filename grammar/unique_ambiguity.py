"""Whether one prefix of a tagged document may open a unique array or another one (`uniqueItems`).

The tagged automaton (see `formwork.grammar.json_schema.unique_arrays`) is ambiguous when some
reachable state moves both on `TAG` and on ``[``.  Its whole subset construction can be far past
any budget (a large schema splices its string, number and open-value lexemes in many places, each
copy with states of its own), so the search here walks the reachable states but jumps over
lexemes: a state that lies inside one lexeme, where the lexeme cannot end yet, leads, inside the
lexeme, only to states that hold none but the lexeme's states (no `TAG` move: checked on the
lexeme's own automaton), and out of it only to `after` (the states after the lexeme) or, where the
lexeme may end but also go on, to `after` joined with the lexeme's states.  When no byte that the
lexeme may go on with at such an end is one that `after` moves on (nor ``[`` where `after` moves on
`TAG`), each joined state moves like `after` or stays in the lexeme, so visiting `after` instead
decides the same; otherwise the search expands the state as usual.  Exact: it answers as the
whole automaton would.
"""
from __future__ import annotations

import weakref
from typing import Any, Optional

import numpy as np

from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.unique_scan import TAG

BRACKET = 0x5B
MAX_LEXEME_STATES = 50_000  # a lexeme automaton with more states than this is not jumped over
Ends = tuple[bool, np.ndarray]  # (some state moves on TAG, the bytes some end goes on with)
_ENDS: "weakref.WeakKeyDictionary[Any, Optional[Ends]]" = weakref.WeakKeyDictionary()


def ambiguous(dfa: Any, budget: CompileBudget) -> bool:
    """Whether some reachable state of the tagged automaton `dfa` moves both on `TAG` and on ``[``
    (one prefix then opens a unique array or another one).  A lazy `dfa` is searched on a twin over
    the same NFA, under `budget`, so that the matcher's automaton keeps only the states it walks."""
    if not getattr(dfa, "lazy", False):
        class_of_byte, rows = dfa.byte_classes()
        return bool(np.any((rows[:, class_of_byte[TAG]] != DEAD) & (rows[:, class_of_byte[BRACKET]] != DEAD)))
    return search(dfa.twin(budget), budget)


def search(dfa: LazyDFA, budget: CompileBudget) -> bool:
    """`ambiguous` for a lazy automaton, searched itself: breadth-first, a batch of rows built per round."""
    class_of_byte, _ = dfa.byte_classes()
    tag, bracket = int(class_of_byte[TAG]), int(class_of_byte[BRACKET])
    seen = np.zeros(dfa.num_states, dtype=bool)
    seen[START] = True
    todo = [START]
    while todo:
        budget.check_time("the uniqueItems ambiguity check")
        expand = []
        for s in todo:
            after = _jump(dfa, s)
            if after is None:
                expand.append(s)
            else:
                seen = _grown(seen, after + 1)
                if not seen[after]:
                    seen[after] = True
                    expand.append(after)  # its lexeme states are none of its own: expanded as usual
        dfa.ensure(expand)
        rows = dfa.byte_classes()[1][expand]
        if np.any((rows[:, tag] != DEAD) & (rows[:, bracket] != DEAD)):
            return True
        seen = _grown(seen, dfa.num_states)
        fresh = np.zeros(seen.size, dtype=bool)
        fresh[rows.ravel()] = True
        fresh &= ~seen
        fresh[DEAD] = False
        seen |= fresh
        todo = np.flatnonzero(fresh).tolist()
    return False


def _grown(flags: np.ndarray, size: int) -> np.ndarray:
    """`flags` (booleans) with room for `size` entries, the new ones False."""
    if size <= flags.size:
        return flags
    return np.concatenate([flags, np.zeros(max(size, 2 * flags.size) - flags.size, dtype=bool)])


def _jump(dfa: LazyDFA, s: int) -> Optional[int]:
    """The state to visit instead of `s` when `s` lies inside a lexeme that cannot end yet and the
    jump decides the same (see the module's note), else None."""
    inside = dfa.lexeme_state(s)
    if inside is None or inside.ends:
        return None
    # what the lexeme's whole automaton can do covers what it can do from here; a bounded
    # repetition's place stands in the shared automaton of item{0,HORIZON}, which covers it too
    ends = _ends(inside.counted.automaton if inside.counted is not None else inside.automaton)
    if ends is None or ends[0]:
        return None
    goes_on = ends[1]
    if goes_on.any():
        moves = dfa.row(inside.after) != DEAD
        if moves[TAG]:
            moves[BRACKET] = True
        if np.any(goes_on & moves):
            return None
    return inside.after


def _ends(automaton: Any) -> Optional[Ends]:
    """(whether some state of a lexeme's own automaton moves on `TAG`, the bytes its accepting
    states move on), or None past `MAX_LEXEME_STATES`; kept per automaton (lexeme automata are
    shared by compilations)."""
    if automaton in _ENDS:
        return _ENDS[automaton]
    seen = np.zeros(max(automaton.num_states, START + 1), dtype=bool)
    seen[START] = True
    frontier = [START]
    while frontier:
        automaton.ensure(frontier)
        class_of_byte, rows = automaton.byte_classes()
        seen = _grown(seen, automaton.num_states)
        fresh = np.zeros(seen.size, dtype=bool)
        fresh[rows[frontier].ravel()] = True
        fresh &= ~seen
        fresh[DEAD] = False
        seen |= fresh
        frontier = np.flatnonzero(fresh).tolist()
        if np.count_nonzero(seen) > MAX_LEXEME_STATES:
            _ENDS[automaton] = None
            return None
    seen[DEAD] = False
    reach = np.flatnonzero(seen)
    class_of_byte, rows = automaton.byte_classes()
    ends = reach[np.asarray(automaton.accepting, dtype=bool)[reach]]
    goes_on = (rows[ends] != DEAD).any(axis=0)[class_of_byte]
    got = _ENDS[automaton] = (bool(np.any(rows[reach, class_of_byte[TAG]] != DEAD)), goes_on)
    return got
