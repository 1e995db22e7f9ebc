"""A small incremental JSON scanner over the bytes a matcher accepts (for `uniqueItems`).

The grammar already guarantees the bytes are a prefix of valid JSON, so the scanner only follows
structure: a state is ``(mode, frames, aux)``, immutable and hashable, and `step` returns the next
state, the value events of the byte and flags saying how the byte can change a value.

Modes: ``V`` between tokens, ``S`` inside a string, ``E`` after a backslash, ``U`` inside a
``\\uXXXX`` escape (aux: hex digits left), ``N`` inside a number (aux: its part, and whether the
mantissa has a non-zero digit), ``L`` inside ``true``/``false``/``null`` (aux: the bytes left).

Frames name each open container and where it stands: ``R`` the document, ``a`` an array, ``A`` an
array whose items must be distinct (``uniqueItems``), ``o`` an object; the second letter is ``0``
(just opened), ``v`` (a value in progress), ``1`` (after a value), ``2`` (after a comma), and for
objects ``k`` (in a key), ``c`` (after a key) and ``w`` (a member value in progress).

Events are ``(kind, frame index)``: ``s`` a value of that frame starts with this byte, ``e`` it
ends with this byte, ``x`` it ended just before this byte (a number), ``c`` the frame closed.
`value_key` names a value up to JSON Schema's equality.
"""
from __future__ import annotations

import json
from typing import Any

State = tuple[str, tuple[str, ...], Any]
Event = tuple[str, int]

#: `step` flags: the byte makes a value grow in a way no repetition can undo (string contents,
#: integer digits, non-zero fraction digits, exponent digits of a non-zero mantissa, array
#: elements) — a cycle through such a byte spells infinitely many distinct values;
CHANGES = 1
#: the byte is one of several spellings of the same value (fractions, exponents, the order of
#: object members);
SPELLING = 2
#: the byte is whitespace between tokens.
SPACE = 4

#: precedes the `[` of a unique array in the tagged automaton (not UTF-8: never in a token)
TAG = 0xFC
START_STATE: State = ("V", ("R0",), None)
_WS = frozenset(b" \t\n\r")
_DIGITS = frozenset(b"0123456789")
_LITERALS = {ord("t"): b"rue", ord("f"): b"alse", ord("n"): b"ull"}
_AFTER_VALUE = {"R": "R1", "a": "a1", "A": "A1", "o": "o1"}
_IN_VALUE = {"R": "Rv", "a": "av", "A": "Av", "o": "ow"}


def _byte_classes() -> bytes:
    """For each byte, the least byte `step` treats the same way from every state (and with either
    `unique`): the bytes it tells apart are these, the whitespace, the closers, the exponent marks,
    the non-zero digits, and everything else (a string's or a literal's byte)."""
    groups = [b" \t\n\r", b"]}", b"eE", b"123456789", *(bytes([b]) for b in b'"\\u,:[{tfn.+-0')]
    out = bytearray([0] * 256)
    for group in groups:
        for b in group:
            out[b] = min(group)
    told = {b for group in groups for b in group}
    rest = min(b for b in range(256) if b not in told)
    for b in range(256):
        if b not in told:
            out[b] = rest
    return bytes(out)


#: `BYTE_CLASS[b]`: the representative of `b`'s class (see `_byte_classes`)
BYTE_CLASS = _byte_classes()


def _started(frames: tuple[str, ...]) -> tuple[str, ...]:
    return frames[:-1] + (_IN_VALUE[frames[-1][0]],)


def _ended(frames: tuple[str, ...]) -> tuple[str, ...]:
    return frames[:-1] + (_AFTER_VALUE[frames[-1][0]],)


def step(state: State, b: int, unique: bool = False) -> tuple[State, tuple[Event, ...], int]:
    """(next state, events, flags) after byte `b`; `unique`: a `[` here opens a unique array."""
    mode, frames, aux = state
    top = len(frames) - 1
    if mode == "S":
        if b == 0x22:  # closing quote
            if frames[top] == "ok":
                return ("V", frames[:-1] + ("oc",), None), (), 0
            return ("V", _ended(frames), None), (("e", top),), 0
        return (("E", frames, None) if b == 0x5C else state), (), CHANGES
    if mode == "E":
        return (("U", frames, 4) if b == 0x75 else ("S", frames, None)), (), CHANGES
    if mode == "U":
        return (("U", frames, aux - 1) if aux > 1 else ("S", frames, None)), (), CHANGES
    if mode == "N":
        got = _number_step(aux, b)
        if got is not None:
            return ("N", frames, got[0]), (), got[1]
        after, events, flags = step(("V", _ended(frames), None), b, unique)
        return after, (("x", top),) + events, flags
    if mode == "L":
        if len(aux) == 1:
            return ("V", _ended(frames), None), (("e", top),), 0
        return ("L", frames, aux[1:]), (), 0
    return _structural(frames, b, unique)


def _structural(frames: tuple[str, ...], b: int, unique: bool) -> tuple[State, tuple[Event, ...], int]:
    top = len(frames) - 1
    frame = frames[top]
    if b in _WS:
        return ("V", frames, None), (), SPACE
    if b == 0x22 and frame in ("o0", "o2"):  # a key
        return ("S", frames[:-1] + ("ok",), None), (), CHANGES
    if b == 0x2C:  # comma
        kind = frame[0]
        return ("V", frames[:-1] + (kind + "2",), None), (), SPELLING if kind == "o" else CHANGES
    if b == 0x3A:  # colon
        return ("V", frames[:-1] + ("ov",), None), (), 0
    if b in (0x5D, 0x7D):  # ] or }: the container closes and ends a value of its parent
        parent = frames[:-1]
        if not parent:  # a state relative to this container (see `unique_regions`)
            return ("V", parent, None), (("c", top),), 0
        return ("V", _ended(parent), None), (("c", top), ("e", top - 1)), 0
    started = _started(frames)
    start = (("s", top),)
    if b == 0x22:
        return ("S", started, None), start, CHANGES
    if b == 0x5B:
        return ("V", started + ("A0" if unique else "a0",), None), start, 0
    if b == 0x7B:
        return ("V", started + ("o0",), None), start, 0
    if b in _LITERALS:
        return ("L", started, _LITERALS[b]), start, 0
    number = _number_start(b)
    return ("N", started, number), start, CHANGES


def _number_start(b: int) -> tuple[str, bool]:
    if b == 0x2D:
        return ("-", False)
    return ("z", False) if b == 0x30 else ("i", True)


def _number_step(aux: tuple[str, bool], b: int) -> tuple[tuple[str, bool], int] | None:
    """(next number part, flags) if `b` continues the number, else None."""
    part, nonzero = aux
    digit = b in _DIGITS
    if part == "-":
        return (("z", False) if b == 0x30 else ("i", True)), CHANGES
    if part in ("z", "i", "f") and b in (0x65, 0x45):
        return ("x", nonzero), SPELLING
    if part in ("z", "i") and b == 0x2E:
        return ("p", nonzero), SPELLING
    if not digit:
        if part == "x" and b in (0x2B, 0x2D):
            return ("y", nonzero), SPELLING
        return None
    if part == "i":
        return ("i", True), CHANGES
    if part in ("p", "f"):
        return ("f", nonzero or b != 0x30), CHANGES if b != 0x30 else SPELLING
    if part in ("x", "y", "d"):
        return ("d", nonzero), CHANGES if nonzero and b != 0x30 else SPELLING
    return None  # a digit after a leading zero: not JSON, the grammar never allows it


def integral(value: Any) -> Any:
    """`value` with integral floats as ints (JSON Schema: 1 == 1.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [integral(v) for v in value]
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    return value


def value_key(value: Any) -> str:
    """A key equal for values JSON Schema calls equal (1 == 1.0; true != 1; member order free)."""
    return json.dumps(integral(value), sort_keys=True)
