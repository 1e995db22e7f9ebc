"""`idn-hostname` and `idn-email`, enforced as sound subsets (issue 21: CycloneDX's bom-1.4/1.5).

The oracle is jsonschema's FORMAT_CHECKER: `idna.encode` for idn-hostname, "contains '@'" for
idn-email. Every string the grammar accepts must pass it (hypothesis, on strings drawn from
label-like pieces that hit the edge cases: A-labels, hyphens in places 3-4, U-labels, dots,
lengths, and on U-labels drawn from the table of `idn_labels`); ASCII letter-digit-hyphen names
within the hostname shapes, short U-labels, and RFC 6531 addresses with non-ASCII local parts are
accepted; the table is inside the set re-derived from the installed idna and unicodedata."""
import unicodedata
import json

import idna
import jsonschema
from idna import idnadata
from idna.intranges import intranges_contain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema.automata import SHARED, accepts
from formwork.grammar.json_schema.idn_labels import MAX_U_LABEL, U_LABEL_CODE_POINTS

CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
_DFAS: dict = {}


def ok(fmt: str, value: str) -> bool:
    """Whether the grammar of ``{"type": "string", "format": fmt}`` accepts `value`'s JSON text."""
    if fmt not in _DFAS:
        _DFAS[fmt] = SHARED.compile(lower_json_schema({"type": "string", "format": fmt}).node)
    return accepts(_DFAS[fmt], json.dumps(value, ensure_ascii=False).encode("utf-8"))


def idna_ok(name: str) -> bool:
    try:
        idna.encode(name)
    except (idna.IDNAError, UnicodeError):
        return False
    return True


_PIECES = ["xn--", "XN--", "--", "-", "a", "Z", "0", "9", "ab", "b-c", "ü", "한", "ß", "ا", "_",
           "a" * 30, "é", "\u3002", "\u00b7", "l", "Ü", "e\u0301", "\u1100\u1161", "ᄀ",
           "\u200d", "\u0627\u0644", "\U00010400", "ǅ"]
label = st.lists(st.sampled_from(_PIECES), min_size=0, max_size=5).map("".join)
names = st.lists(label, min_size=1, max_size=5).map(".".join) | st.text(max_size=12)
ldh_label = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,13}[A-Za-z0-9])?", fullmatch=True)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(names)
def test_every_accepted_idn_hostname_passes_idna(name):
    if ok("idn-hostname", name):
        assert idna_ok(name) and CHECKER.conforms(name, "idn-hostname"), name


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ldh_label, min_size=1, max_size=3))
def test_ascii_ldh_names_idna_accepts_are_accepted(labels):
    name = ".".join(labels)
    if all(len(x) < 4 or x[2:4] != "--" for x in labels):  # else an A-label or reserved
        assert idna_ok(name) and ok("idn-hostname", name), name
    else:
        assert not ok("idn-hostname", name), name


def test_idn_hostname_examples():
    for good in ["example.com", "A-b.c0", "a" * 63 + ".b", "0.1.2"]:
        assert ok("idn-hostname", good) and idna_ok(good), good
    for bad in ["", "-a", "a-", "ab--c", "xn--abc.com", "XN--nxasmq6b", "a_b", "a..b", ".a",
                "a" * 64, "München.de", "ü" * 9 + ".de", "a.b.c.ü", "-ü.de", "ab-ü.de"]:
        assert not ok("idn-hostname", bad), bad
    for good in ["münchen.de", "例え.テスト", "실례.테스트", "ß.de", "ü" * 8 + ".de", "a.b.ü"]:
        assert ok("idn-hostname", good) and idna_ok(good), good
    assert idna_ok("ü" * 9 + ".de") and idna_ok("ab-ü.de")  # valid, outside the subset


def _wide(index: int) -> str:
    """The `index`-th code point of the U-label table (wrapping around)."""
    sizes = [1 if isinstance(r, int) else r[1] - r[0] + 1 for r in U_LABEL_CODE_POINTS]
    index %= sum(sizes)
    for r, size in zip(U_LABEL_CODE_POINTS, sizes):
        if index < size:
            return chr(r if isinstance(r, int) else r[0] + index)
        index -= size
    raise AssertionError("unreachable")


u_char = st.integers(0, 10 ** 6).map(_wide) | st.sampled_from(list("az09-"))
u_labels = st.lists(u_char, min_size=1, max_size=MAX_U_LABEL + 1).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(u_labels | st.sampled_from(["a", "Ab", "example"]), min_size=1, max_size=4))
def test_u_labels_from_the_table_are_sound_and_short_ones_accepted(labels):
    name = ".".join(labels)
    if ok("idn-hostname", name):
        assert idna_ok(name), name
    if len(labels) <= 3 and all(len(x) <= MAX_U_LABEL and x[0] != "-" and x[-1] != "-"
                                and x[2:3] != "-" for x in labels):
        assert ok("idn-hostname", name), name


def test_the_u_label_table_is_inside_what_the_installed_idna_accepts():
    """Each code point is PVALID, Ll/Lo, bidi L, combining class 0, its own NFC, and never the
    second of a canonical composition nor a Hangul medial/final jamo (re-derived here)."""
    second = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for cp in range(0x110000):
        parts = unicodedata.decomposition(chr(cp)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            second.add(int(parts[1], 16))
    count = 0
    for r in U_LABEL_CODE_POINTS:
        for cp in ([r] if isinstance(r, int) else range(r[0], r[1] + 1)):
            c = chr(cp)
            assert 0x80 <= cp <= 0xFFFF and cp not in second, hex(cp)
            assert intranges_contain(cp, idnadata.codepoint_classes["PVALID"]), hex(cp)
            assert unicodedata.category(c) in ("Ll", "Lo") and unicodedata.bidirectional(c) == "L"
            assert unicodedata.combining(c) == 0 and unicodedata.normalize("NFC", c) == c
            count += 1
    assert count > 40_000


local = st.lists(st.sampled_from(["a", "ü", "한", ".", "\"", "\\", " ", "@", "+", "é", "x"]),
                 max_size=6).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(local, st.sampled_from(["@", "", "@@"]),
       names | st.sampled_from(["[1.2.3.4]", "[IPv6:::1]"]))
def test_every_accepted_idn_email_passes_jsonschema(left, at, right):
    address = left + at + right
    if ok("idn-email", address):
        assert CHECKER.conforms(address, "idn-email"), address
        if address.isascii():  # ASCII addresses: the email language
            assert ok("email", address), address


def test_idn_email_examples():
    for good in ["a@b.com", "jöhn.doe@example.com", "用户@example.com", '"ü x"@ex.org',
                 "ü@[1.2.3.4]", "a@[IPv6:::1]"]:
        assert ok("idn-email", good), good
    assert ok("idn-email", "a@münchen.de") and ok("idn-email", "用户@例え.テスト")
    for bad in ["@x.com", "a.@x.com", "a@xn--x.com", "a@b@c.com", "a", "a@", "a@München.de"]:
        assert not ok("idn-email", bad), bad
    # ASCII addresses: the same language as email
    for text in ["a@b.com", "a..b@c.com", '"x y"@ex.org', "a@[1.2.3.4]"]:
        assert ok("idn-email", text) == ok("email", text), text
