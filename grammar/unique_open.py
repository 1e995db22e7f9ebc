"""Unique arrays whose items are any JSON value, or any string: freshness read off the scanner state.

The lowering tags such an array (items the open value or ``{"type": "string"}``, no prefix items, no
``contains``: only its length is bounded) with `OPEN_TAG` instead of `unique_scan.TAG`.  Every
completion of its items is then a JSON value of the bounded nesting (or a string), whatever the
schema around it, so the region analysis (`unique_regions`) needs no automaton: an item in
progress can end as infinitely many values — the region analysis calls it good — unless it is a
literal (``t``, ``fals``) or a number whose mantissa is zero past its exponent mark (``0e``,
``-0.0E+1``: every completion is 0), and with no item in progress the array closes after as many
new items as it needs (`endless`).  Only a token that ends an item, or that ends inside such a
literal or number, can then be refused (`LooseEnds`: per vocabulary, the tokens whose scanner
walk from a given mode ends there).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from formwork.grammar.unique_scan import State, step

#: precedes the `[` of a unique array of open values (not UTF-8: never in a token)
OPEN_TAG = 0xFD
#: `unique_regions.TaggedMoves` flag of a move that opens such an array (1: another unique array)
OPEN_VALUES = 2
_FRAMES = ("Rv", "av")  # frames the mode automaton steps with (a mode's moves ignore them)


def endless(rel: State) -> bool:
    """Whether the array (of open values) can close from scanner state `rel` (relative to it)
    with every item new whatever the items seen: the verdict `Regions.good` gives its nodes."""
    mode, frames, aux = rel
    if len(frames) > 1:  # inside a container of the item: it can take more members
        return True
    if mode == "L":
        return False
    return not (mode == "N" and aux[0] in "xyd" and not aux[1])


def _loose(mode: str, aux: Any) -> bool:
    """Whether a scanner ending in (mode, aux) may be where `endless` fails."""
    return mode == "L" or (mode == "N" and aux[0] in "xyd" and not aux[1])


class ModeAutomaton:
    """The scanner's (mode, aux) as a byte automaton: what `unique_scan.step` does to them does
    not depend on the frames."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, Any], int] = {}
        rows: list[list[int]] = []
        todo = [("V", None), ("S", None)]
        for key in todo:
            self.index[key] = len(self.index)
        while len(rows) < len(todo):
            mode, aux = todo[len(rows)]
            row = []
            for b in range(256):
                after, _, _ = step((mode, _FRAMES, aux), b)
                key = (after[0], after[2])
                if key not in self.index:
                    self.index[key] = len(todo)
                    todo.append(key)
                row.append(self.index[key])
            rows.append(row)
        self.table = np.array(rows, dtype=np.uint8)
        self.loose = np.array([_loose(*key) for key in todo], dtype=bool)


MODES = ModeAutomaton()


class LooseEnds:
    """Per vocabulary: for each scanner (mode, aux), the tokens whose walk from it ends where
    `endless` may fail (a literal, a number with a zero mantissa past its exponent mark)."""

    def __init__(self, token_bytes: list[Optional[bytes]]):
        present = [i for i, data in enumerate(token_bytes) if data]
        present.sort(key=lambda i: -len(token_bytes[i]))  # the tokens still walking: a prefix
        lengths = np.array([len(token_bytes[i]) for i in present], dtype=np.int64)
        states = np.repeat(np.arange(len(MODES.table), dtype=np.uint8)[:, None], len(present), axis=1)
        longest = int(lengths[0]) if len(present) else 0
        flat = np.frombuffer(b"".join(token_bytes[i] for i in present), dtype=np.uint8)
        starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
        active = len(present)
        for pos in range(longest):
            while active and lengths[active - 1] <= pos:
                active -= 1
            states[:, :active] = MODES.table[states[:, :active], flat[starts[:active] + pos]]
        ids = np.array(present, dtype=np.int64)
        self._by_mode = [ids[MODES.loose[states[s]]] for s in range(len(MODES.table))]

    def tokens(self, mode: str, aux: Any) -> Optional[np.ndarray]:
        """The token ids that may end loose from (mode, aux), or None for a mode never seen."""
        at = MODES.index.get((mode, aux))
        return None if at is None else self._by_mode[at]
