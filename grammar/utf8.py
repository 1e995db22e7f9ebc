"""Code point ranges to UTF-8 byte-range sequences (surrogates excluded)."""
from __future__ import annotations

from collections.abc import Iterable

MAX_CODE_POINT = 0x10FFFF
SURROGATES = (0xD800, 0xDFFF)
_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF, MAX_CODE_POINT)

ByteRangeSeq = tuple[tuple[int, int], ...]


def normalize_code_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sort and merge code point ranges, dropping the surrogate block."""
    cleaned: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if not (0 <= lo <= hi <= MAX_CODE_POINT):
            raise ValueError(f"invalid code point range ({lo:#x}, {hi:#x})")
        # cut out surrogates: they are not encodable in UTF-8
        if lo < SURROGATES[0]:
            cleaned.append((lo, min(hi, SURROGATES[0] - 1)))
        if hi > SURROGATES[1]:
            cleaned.append((max(lo, SURROGATES[1] + 1), hi))
    cleaned.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in cleaned:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return merged


def complement_code_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """All scalar values not in the (normalised) ranges."""
    out: list[tuple[int, int]] = []
    nxt = 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODE_POINT:
        out.append((nxt, MAX_CODE_POINT))
    return normalize_code_ranges(out)


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8")


def length_segments(lo: int, hi: int) -> list[tuple[int, int]]:
    """[lo, hi] cut where the UTF-8 encoded length changes, in order: each piece's code points
    all encode to the same number of bytes."""
    out: list[tuple[int, int]] = []
    for limit in _LENGTH_LIMITS:
        if lo > hi:
            break
        if lo <= limit:
            top = min(hi, limit)
            out.append((lo, top))
            lo = top + 1
    return out


def utf8_sequences(lo: int, hi: int) -> list[ByteRangeSeq]:
    """Split [lo, hi] (no surrogates inside) into sequences of byte ranges.

    Each result is a tuple of (byte_lo, byte_hi) pairs; the union of the byte
    strings they describe is exactly the UTF-8 encoding of [lo, hi].
    """
    out: list[ByteRangeSeq] = []
    for segment in length_segments(lo, hi):
        _aligned_sequences(*segment, out)
    return out


def _aligned_sequences(lo: int, hi: int, out: list[ByteRangeSeq]) -> None:
    """Append to `out` the byte-range sequences of [lo, hi], code points of one encoded length."""
    if hi <= 0x7F:
        out.append(((lo, hi),))
        return
    stack = [(lo, hi)]
    while stack:
        lo, hi = stack.pop()
        split = False
        # align so that trailing continuation bytes span full ranges
        for i in range(1, 4):
            mask = (1 << (6 * i)) - 1
            if (lo & ~mask) != (hi & ~mask):
                if lo & mask:
                    stack.append(((lo | mask) + 1, hi))
                    stack.append((lo, lo | mask))
                    split = True
                    break
                if (hi & mask) != mask:
                    stack.append((hi & ~mask, hi))
                    stack.append((lo, (hi & ~mask) - 1))
                    split = True
                    break
        if split:
            continue
        a, b = _encode(lo), _encode(hi)
        out.append(tuple(zip(a, b)))
