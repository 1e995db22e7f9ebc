"""The canonical spelling of a decoded character class (`strings.encode_decoded` over `ir_chars.chars`,
as `pattern` lowers): exactly the JSON spellings of the class's characters; a class (or a
multi-byte sequence) written raw is its own spelling, and classes sharing a code point range share
its multi-byte nodes."""
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.ir import Seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.json_schema.automata import SHARED, accepts
from formwork.grammar.json_schema.strings import encode_decoded

_POINTS = st.sampled_from([0x00, 0x09, 0x0A, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x41, 0x5B, 0x5C, 0x5D,
                           0x7E, 0x7F, 0x80, 0xA0, 0x7FF, 0x800, 0x2028, 0xD7FF, 0xE000, 0xFFFF,
                           0x10000, 0x10FFFF]) | st.integers(0, 0x10FFFF).filter(lambda c: not 0xD800 <= c <= 0xDFFF)
_RANGES = st.lists(st.tuples(_POINTS, _POINTS).map(sorted).map(tuple)
                   .filter(lambda r: not (r[0] <= 0xDFFF and r[1] >= 0xD800)), min_size=1, max_size=4)


def _spelling(c: int) -> bytes:
    return json.dumps(chr(c), ensure_ascii=False)[1:-1].encode("utf-8")


@settings(deadline=None, max_examples=80)
@given(_RANGES, st.booleans(), st.lists(_POINTS, min_size=1, max_size=12))
def test_spelling_of_a_class_is_its_characters_spelled(ranges, negate, probes):
    dfa = SHARED.compile(encode_decoded(chars(ranges, negate=negate)))
    for c in probes + [lo for lo, _ in ranges]:
        inside = any(lo <= c <= hi for lo, hi in ranges) != negate
        assert accepts(dfa, _spelling(c)) == inside, (ranges, negate, hex(c))
        if _spelling(c) != chr(c).encode("utf-8"):  # an escaped character: never raw
            assert not accepts(dfa, chr(c).encode("utf-8"))


def test_raw_classes_are_their_own_spelling():
    ascii_raw = chars([("a", "z"), ("0", "9")])
    assert encode_decoded(ascii_raw) is ascii_raw
    two_bytes = chars([(0x100, 0x7FF)])
    assert isinstance(two_bytes, Seq) and encode_decoded(two_bytes) is two_bytes


def test_classes_sharing_a_range_share_its_sequences():
    colon = chars([(0x3A, 0x3A), (0x2000, 0x200A)], negate=True)
    semicolon = chars([(0x3B, 0x3B), (0x2000, 0x200A)], negate=True)
    multi_colon = [x for x in colon.items if isinstance(x, Seq)]
    multi_semicolon = [x for x in semicolon.items if isinstance(x, Seq)]
    assert multi_colon and all(a is b for a, b in zip(multi_colon, multi_semicolon))
