"""`uniqueItems` in the matcher: the items of each open unique array, checked token by token.

A grammar with unique arrays over unbounded items carries `UniqueArrays`: the tagged automaton
(`unique_regions`) and its analysis.  Each matcher keeps a `UniqueTracker`, which walks every
accepted byte through the tagged automaton and a JSON scanner (`unique_scan`), and keeps, per open
unique array, the value keys (`value_key`: 1 == 1.0, member order free, escapes decoded) and
spellings of its items so far.

Where one `[` may open a unique array or another one (branches disagreeing on ``uniqueItems`` at
the same place) the tagged automaton moves both ways, and the document is valid when one of its
readings is: the tracker keeps every live *reading* (tagged state, scanner state, open unique
arrays), applies the rule below to each, and refuses a token only when no reading is left;
readings that meet in one state with the same arrays merge.

The rule (what is masked, and why no dead end is reachable).  A token is refused when
(1) it ends an item equal to an earlier item of its array — a string ends at its closing quote, a
container at its closing bracket, a literal at its last letter, a number at the byte after it; or
(2) after it, some open unique array can no longer be closed with every item new: the item in
progress, and the items the array still needs, must be completable to values seen nowhere before
(`Regions.fresh`: exact where an item passes an inexhaustible cycle, else a bounded search whose
witness keeps the unique arrays nested in the item new too: one completion for every level).
(2) holds before every step the matcher takes (the start holds it: no array is open), and a
completion that keeps it exists after the next byte of the completion that witnessed it; so the
matcher can always finish, and every document it finishes has distinct items in every unique
array.  `accept_token` and the mask apply the same rule: the mask tests only the tokens that can
end an item or open a unique array (by the bytes they hold, per scanner context: `unique_vocab`;
in a string item, only the tokens that end it as an earlier value, or hold more after the quote),
plus — where some node of the region is not good — the tokens that leave the current string
(when every character of it leads to good nodes), or outside strings the tokens that can end the
item in progress (when every node it reaches without ending is good: `Regions.good_in_item`), else
those that spell a prefix of an earlier item (canonical spellings), else every allowed token.
In a unique array of open values (`unique_open`) no analysis is needed: the tokens that can end
an item, and those that can stop inside a literal or a zero number's exponent, are tested.
"""
from __future__ import annotations

import json
from typing import Any, Hashable, Optional

import numpy as np

from formwork.grammar.dfa import START
from formwork.grammar.unique_open import OPEN_VALUES, endless
from formwork.grammar.unique_regions import Regions, TaggedMoves
from formwork.grammar.unique_search import search
from formwork.grammar.unique_scan import START_STATE, State, integral, step, value_key
from formwork.grammar.unique_vocab import (
    ANY, BACKSLASH, CLOSE, COMMA, LITERAL, NUMBER_END, OPEN, QUOTE, SPACE, TWO_QUOTES, vocab_tables,
)

_MAX_SHAPES = 4096  # snapshot shapes whose token verdicts are kept (`UniqueTracker._shape_verdicts`)
Level = tuple[int, int, tuple[str, ...], tuple[Any, ...], bool]  # frame index, item start, keys, values, open
Reading = tuple[int, State, tuple[Level, ...]]  # tagged state, scanner state, levels
Snapshot = tuple[tuple[Reading, ...], int]  # the live readings, bytes


class UniqueArrays:
    """What a compiled grammar carries for its unique arrays (shared by its matchers)."""

    def __init__(self, tagged_dfa: Any, pointers: tuple[str, ...]):
        self.moves = TaggedMoves(tagged_dfa)
        self.regions = Regions(self.moves)
        self.pointers = pointers  # the schema's uniqueItems keywords enforced this way
        self._quiet: dict[tuple[int, State], tuple[int, ...]] = {}  # see UniqueTracker.filter
        self._verdicts: dict[Hashable, dict[int, bool]] = {}  # see UniqueTracker._refuses


class UniqueTracker:
    """The unique-array state of one matcher, with one snapshot per accepted step."""

    def __init__(self, unique: UniqueArrays, vocab: Any):
        self.unique = unique
        self.vocab = vocab
        self._buf = bytearray()
        self._snap: Snapshot = (((START, START_STATE, ()),), 0)
        self._history: list[Snapshot] = []
        self._keyed = False  # whether a step read the items seen or the item's text (`_refuses`)

    # ------------------------------------------------------------ steps
    def advance(self, data: bytes) -> Optional[tuple[Snapshot, bytes]]:
        """The snapshot after `data` (and the bytes to keep), or None if the rule refuses it in
        every reading."""
        readings, size = self._snap
        moves = self.unique.moves
        local = bytearray()
        for b in data:
            pos = size + len(local)
            local.append(b)
            if len(readings) == 1:  # the usual case: one reading, one move
                t, state, levels = readings[0]
                options = moves.nexts(t, b)
                if len(options) == 1:
                    got = self._step(*options[0], state, levels, b, pos, local, size)
                    if got is None:
                        return None
                    readings = (got,)
                    continue
            after: dict[Any, Reading] = {}
            for t, state, levels in readings:
                for nxt, unique in moves.nexts(t, b):
                    got = self._step(nxt, unique, state, levels, b, pos, local, size)
                    if got is not None:
                        after.setdefault(_identity(got), got)
            if not after:
                return None
            readings = tuple(after.values())
        end = size + len(local)
        live = tuple(r for r in readings if self._fresh(r, end, local, size))
        return ((live, end), bytes(local)) if live else None

    def _step(self, t: int, unique: int, state: State, levels: tuple[Level, ...], b: int, pos: int,
              local: bytearray, size: int) -> Optional[Reading]:
        """One reading after byte `b` (at `pos`) into tagged state `t`, or None if it ends a
        duplicate item."""
        state, events, _ = step(state, b, unique)
        for kind, frame in events:
            at = _level_at(levels, frame)
            if at < 0:
                continue
            index, start, keys, values, opened = levels[at]
            if kind == "s":
                levels = _replace(levels, at, (index, pos, keys, values, opened))
            elif kind == "c":
                levels = levels[:at] + levels[at + 1:]
            else:  # an item ends: with this byte ("e") or before it ("x")
                self._keyed = True
                value = json.loads(self._text(start, pos + 1 if kind == "e" else pos, local, size))
                key = value_key(value)
                if key in keys:
                    return None
                levels = _replace(levels, at, (index, -1, keys + (key,), values + (value,), opened))
        if unique:
            levels = levels + ((len(state[1]) - 1, -1, (), (), unique == OPEN_VALUES),)
        return t, state, levels

    def _fresh(self, reading: Reading, end: int, local: bytearray, size: int) -> bool:
        """Whether every open unique array of `reading` can still close with every item new."""
        t, state, levels = reading
        regions = self.unique.regions
        for index, start, keys, _, opened in levels:
            node = (t, (state[0], state[1][index:], state[2]))
            if endless(node[1]) if opened else regions.sure(node, start < 0, len(keys)):
                continue
            self._keyed = True
            prefix = self._text(start, end, local, size) if start >= 0 else None
            nested = tuple((inner - index, self._text(at, end, local, size) if at >= 0 else None, frozenset(seen))
                           for inner, at, seen, _, _ in levels if inner > index)
            if not (search(regions, node, prefix, keys, nested) if opened
                    else regions.fresh(node, prefix, keys, nested)):
                return False
        return True

    def _text(self, start: int, end: int, local: bytearray, size: int) -> bytes:
        if start >= size:
            return bytes(local[start - size:end - size])
        return bytes(self._buf[start:size]) + bytes(local[:end - size])

    def commit(self, advanced: tuple[Snapshot, bytes]) -> None:
        snap, data = advanced
        self._history.append(self._snap)
        del self._buf[self._snap[1]:]
        self._buf += data
        self._snap = snap

    def hold(self) -> None:
        """A step that adds no bytes (a stop token)."""
        self._history.append(self._snap)

    def rollback(self, steps: int) -> None:
        if steps:
            self._snap = self._history[-steps]
            del self._history[-steps:]

    def reset(self) -> None:
        self._snap = (((START, START_STATE, ()),), 0)
        self._history.clear()
        self._buf.clear()

    # ------------------------------------------------------------ masks
    def filter(self, view: np.ndarray, index: int) -> None:
        """Clear, in row `index` of `view` (the grammar's mask), the tokens the rule refuses."""
        readings, size = self._snap
        if not any(levels for _, _, levels in readings):
            # only a token that opens a unique array can matter: the same everywhere (in a
            # string, only one that leaves it first: with a quote too)
            key = tuple((t, state) for t, state, _ in readings)
            refused = self.unique._quiet.get(key)
            if refused is None:
                leave = QUOTE if readings[0][1][0] in ("S", "E", "U") else 0
                refused = self.unique._quiet[key] = tuple(self._refused(view[index], OPEN, set(), False,
                                                                        False, [], leave))
        else:
            # a token refused in every reading is refused in one the grammar's mask allows it
            # in: so among the candidates of that reading, and of their union
            bits, extra, structured, everything, loose = 0, set(), False, False, []
            for reading in readings:
                more = self._candidates(*reading, size) if reading[2] else (OPEN, set(), False, False, [])
                bits |= more[0]
                extra |= more[1]
                structured |= more[2]
                everything |= more[3]
                loose += more[4]
            refused = self._refused(view[index], bits, extra, structured, everything, loose)
        if refused:
            words = view[index].view(np.uint32)
            for token in refused:
                words[token >> 5] &= np.uint32(~(1 << (token & 31)) & 0xFFFFFFFF)

    def _candidates(self, t: int, state: State, levels: tuple[Level, ...], size: int
                    ) -> tuple[int, set[int], bool, bool, list[np.ndarray]]:
        """(signature bits of the tokens to test, more token ids to test, whether to test the
        tokens with more than a separator after their first quote, whether to test every token,
        arrays of more token ids to test)."""
        regions = self.unique.regions
        tables = vocab_tables(self.vocab)
        bits = 0 if state[0] in ("S", "E", "U") else OPEN  # in a string, `[` is a character
        extra: set[int] = set()
        structured = False
        loose: list[np.ndarray] = []
        for index, start, keys, values, opened in levels:
            if len(keys) > regions.items_limit:  # past what `Regions.good` speaks of
                return bits, extra, structured, True, loose
            rel = (state[0], state[1][index:], state[2])
            prefix = bytes(self._buf[start:size]) if start >= 0 else b""
            so_far = _string_so_far(rel, prefix)
            if so_far is None:
                bits |= _context_bits(rel)
            else:  # a string item: only the rest of an earlier value's characters ends a duplicate
                structured = True
                for value in values:
                    if isinstance(value, str) and value.startswith(so_far):
                        extra.update(tables.closing.get(value[len(so_far):], ()))
            if opened:  # only a token stopping where `endless` fails may leave no new completion
                ends = tables.loose_ends.tokens(state[0], state[2])
                if ends is None:
                    return bits, extra, structured, True, loose
                loose.append(ends)
                continue
            node = (t, rel)
            if regions.all_good(node, start < 0):
                continue
            if state[0] == "S" and regions.good_in_text(node):  # only leaving the string matters
                bits |= QUOTE | BACKSLASH
                continue
            if state[0] != "S" and start >= 0 and regions.good_in_item(node):  # only ending the item
                bits |= _context_bits(rel)
                continue
            rests = None
            if regions.canonical(node) and regions.good(node, True):
                rests = _rests(rel, prefix, values)
            if rests is None:
                return bits, extra, structured, True, loose
            for rest in rests:
                for k in range(1, len(rest) + 1):
                    extra.update(tables.ids.get(rest[:k], ()))
        return bits, extra, structured, False, loose

    def _refused(self, words: np.ndarray, bits: int, extra: set[int], structured: bool,
                 everything: bool, loose: list[np.ndarray], also: int = 0) -> list[int]:
        """The tokens the rule refuses among the allowed ones (in `words`) that hold one of the
        signature `bits` (and, with `also`, one of those too), those of `extra` and `loose`, and
        with `structured` those with more than a separator after their first quote; or among
        every allowed one (`everything`)."""
        allowed = np.unpackbits(np.ascontiguousarray(words).view(np.uint8),
                                bitorder="little")[: self.vocab.vocab_size].astype(bool)
        if everything:
            chosen = allowed
        else:
            tables = vocab_tables(self.vocab)
            chosen = allowed & ((tables.signature & bits) != 0)
            if also:
                chosen &= (tables.signature & also) != 0
            if structured:
                chosen |= allowed & tables.structured
            for token in extra:
                chosen[token] = chosen[token] or allowed[token]
            for ids in loose:
                chosen[ids] |= allowed[ids]
        token_bytes = self.vocab.token_bytes
        verdicts = self._shape_verdicts()
        return [int(token) for token in np.flatnonzero(chosen).tolist()
                if token_bytes[token] is not None and self._refuses(token, token_bytes[token], verdicts)]

    def _shape_verdicts(self) -> dict[int, bool]:
        """The verdicts on tokens shared by every snapshot of this one's shape: its readings' tagged
        states, scanner states, and per open array whether an item is in progress, whether more
        items were seen than `Regions.sure` speaks of, and whether its items are open values."""
        readings, _ = self._snap
        limit = self.unique.regions.items_limit
        shape = tuple((t, state, tuple((index, start >= 0, len(keys) > limit, opened)
                                       for index, start, keys, _, opened in levels))
                      for t, state, levels in readings)
        table = self.unique._verdicts
        if len(table) >= _MAX_SHAPES:
            table.clear()
        return table.setdefault(shape, {})

    def _refuses(self, token: int, data: bytes, verdicts: dict[int, bool]) -> bool:
        """Whether the rule refuses `token`; remembered in `verdicts` (this snapshot's shape) when
        no step read the items seen or the text of an item: then every snapshot of the shape
        walks it alike (no item ends on the way, and `Regions.sure` answers each array)."""
        got = verdicts.get(token)
        if got is None:
            self._keyed = False
            got = self.advance(data) is None
            if not self._keyed:
                verdicts[token] = got
        return got


def _context_bits(rel: State) -> int:
    """What a token must hold to end an item (or open a unique array) from scanner state `rel`."""
    mode, frames, _ = rel
    if mode in ("S", "E", "U"):
        return QUOTE  # the string must close first
    if len(frames) > 1:
        return CLOSE | OPEN  # inside a container of the item: it must close
    if mode == "N":
        return COMMA | CLOSE | SPACE
    if mode == "L":
        return ANY
    return TWO_QUOTES | CLOSE | OPEN | COMMA | LITERAL | NUMBER_END  # a whole item, or a comma


def _string_so_far(rel: State, prefix: bytes) -> Optional[str]:
    """The characters of a string item so far (between whole characters), else None."""
    if rel[0] != "S" or len(rel[1]) != 1:
        return None
    try:
        return json.loads(prefix + b'"')
    except ValueError:  # inside a UTF-8 sequence
        return None


def _rests(rel: State, prefix: bytes, values: tuple[Any, ...]) -> Optional[list[bytes]]:
    """Where the item (spelled `prefix` so far) is a scalar in a region with one spelling per
    value: the rest of the spelling of each earlier item it may still equal — only a token that
    spells a prefix of one may lead to a duplicate without ending the item; None elsewhere."""
    mode, frames, _ = rel
    if len(frames) != 1:
        return None
    if mode == "V":
        return [_spelling(v) for v in values]
    if mode == "N":
        return [s[len(prefix):] for s in map(_spelling, values) if s.startswith(prefix)]
    if mode == "S":
        so_far = _string_so_far(rel, prefix)
        if so_far is None:
            return None
        return [_spelling(v[len(so_far):])[1:] for v in values
                if isinstance(v, str) and v.startswith(so_far)]
    return None


def _spelling(value: Any) -> bytes:
    """The one spelling a region without second spellings gives `value` (compact, raw UTF-8)."""
    return json.dumps(integral(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _identity(reading: Reading) -> Hashable:
    """What tells readings apart (their values are equal where their keys are)."""
    t, state, levels = reading
    return t, state, tuple(level[:3] + level[4:] for level in levels)


def _level_at(levels: tuple[Level, ...], frame: int) -> int:
    for at, level in enumerate(levels):
        if level[0] == frame:
            return at
    return -1


def _replace(levels: tuple[Level, ...], at: int, level: Level) -> tuple[Level, ...]:
    return levels[:at] + (level,) + levels[at + 1:]
