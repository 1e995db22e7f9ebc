"""`grammar.utf8`: a code point range cut by encoded length, and its UTF-8 byte-range sequences, which
spell exactly the range's encodings."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.utf8 import MAX_CODE_POINT, SURROGATES, length_segments, utf8_sequences

code_points = st.integers(0, MAX_CODE_POINT).filter(lambda cp: not SURROGATES[0] <= cp <= SURROGATES[1])


def _ranges():
    """(lo, hi) without surrogates inside, wide and narrow."""
    return st.tuples(code_points, code_points).map(sorted).filter(
        lambda r: r[1] < SURROGATES[0] or r[0] > SURROGATES[1])


def _spells(sequences, data: bytes) -> bool:
    return any(len(s) == len(data) and all(lo <= b <= hi for (lo, hi), b in zip(s, data)) for s in sequences)


@settings(max_examples=300, deadline=None)
@given(_ranges())
def test_length_segments_cover_the_range_in_order_one_encoded_length_each(bounds):
    lo, hi = bounds
    segments = length_segments(lo, hi)
    assert segments[0][0] == lo and segments[-1][1] == hi
    assert all(a[1] + 1 == b[0] for a, b in zip(segments, segments[1:]))
    for a, b in segments:
        assert len(chr(a).encode()) == len(chr(b).encode())
    assert len({len(chr(a).encode()) for a, _ in segments}) == len(segments)


@settings(max_examples=300, deadline=None)
@given(_ranges(), st.lists(code_points, min_size=1, max_size=20))
def test_sequences_spell_exactly_the_ranges_encodings(bounds, probes):
    lo, hi = bounds
    sequences = utf8_sequences(lo, hi)
    for cp in [lo, hi, *probes]:
        assert _spells(sequences, chr(cp).encode()) == (lo <= cp <= hi), hex(cp)
