"""Character classes as grammar IR: code point ranges (or their complement) encoded in UTF-8,
one byte class per encoded length and leading bytes, and the any-character / any-text languages."""
from __future__ import annotations

from collections.abc import Iterable

from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import ByteRange, ByteSet, Node, alt, repeat, seq
from formwork.grammar.utf8 import complement_code_ranges, length_segments, normalize_code_ranges, utf8_sequences


def _code_point(value: int | str) -> int:
    if isinstance(value, str):
        if len(value) != 1:
            raise GrammarError(f"expected a single character, got {value!r}")
        return ord(value)
    return int(value)


def chars(ranges: Iterable[tuple[int | str, int | str] | int | str], negate: bool = False) -> Node:
    """One character from the code point ranges (or their complement), UTF-8 encoded.

    `ranges` holds (lo, hi) pairs or single characters; ends are ints or 1-char strings.
    Surrogates (U+D800..U+DFFF) are never matched: they are not valid UTF-8.
    """
    pairs: list[tuple[int, int]] = []
    for r in ranges:
        if isinstance(r, tuple):
            pairs.append((_code_point(r[0]), _code_point(r[1])))
        else:
            cp = _code_point(r)
            pairs.append((cp, cp))
    try:
        norm = normalize_code_ranges(pairs)
    except ValueError as exc:
        raise GrammarError(str(exc)) from None
    if negate:
        norm = complement_code_ranges(norm)
    elif norm and norm[-1][1] <= 0x7F:  # ASCII only: one byte class
        return ByteSet(tuple(norm))
    options: list[Node] = []
    single: list[tuple[int, int]] = []
    for lo, hi in norm:
        for segment in length_segments(lo, hi):  # in order, as `utf8_sequences` splits
            if segment[1] <= 0x7F:
                single.append(segment)
            else:
                options.extend(_multi_byte(*segment))
    if single:
        options.insert(0, ByteSet(tuple(single)))
    return alt(*options)


_MULTI_BYTE: dict[tuple[int, int], tuple[Node, ...]] = {}


def _multi_byte(lo: int, hi: int) -> tuple[Node, ...]:
    """A `Seq` of byte classes per UTF-8 sequence of the code points [lo, hi] (one encoded
    length, past ASCII), kept per range (bounded): classes sharing a range share its nodes (the
    complements of `\\s`-based classes: ~25 sequences each, most of them alike)."""
    got = _MULTI_BYTE.get((lo, hi))
    if got is None:
        if len(_MULTI_BYTE) >= 4096:
            _MULTI_BYTE.clear()
        got = _MULTI_BYTE[(lo, hi)] = tuple(seq(*(ByteSet((r,)) for r in byte_seq))
                                            for byte_seq in utf8_sequences(lo, hi))
    return got


_ANY_CHAR: Node | None = None


def any_char() -> Node:
    """Any single Unicode scalar value, UTF-8 encoded."""
    global _ANY_CHAR
    if _ANY_CHAR is None:
        _ANY_CHAR = chars([(0, 0x10FFFF)])
    return _ANY_CHAR


def any_text() -> Node:
    """Any valid UTF-8 string."""
    return repeat(any_char(), 0, None)


def any_bytes() -> Node:
    """Any byte string."""
    return repeat(ByteRange(0, 255), 0, None)
