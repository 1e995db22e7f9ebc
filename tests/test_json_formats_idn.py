"""`idn-hostname` and `idn-email`, enforced as sound subsets (issue 21: CycloneDX's bom-1.4/1.5).

The oracle is jsonschema's FORMAT_CHECKER: `idna.encode` for idn-hostname, "contains '@'" for
idn-email. Every string the grammar accepts must pass it (hypothesis, on strings drawn from
label-like pieces that hit the edge cases: A-labels, hyphens in places 3-4, U-labels, dots,
lengths); ASCII letter-digit-hyphen names within the hostname shapes, and RFC 6531 addresses
with non-ASCII local parts, are accepted."""
import json

import idna
import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema.automata import SHARED, accepts

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
           "a" * 30, "é", "\u3002", "\u00b7", "l"]
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
                "a" * 64, "münchen.de"]:
        assert not ok("idn-hostname", bad), bad
    assert idna_ok("münchen.de")  # a U-label: valid, outside the subset (the warning says so)


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
    for bad in ["@x.com", "a.@x.com", "a@xn--x.com", "a@b@c.com", "a", "a@", "a@münchen.de"]:
        assert not ok("idn-email", bad), bad
    # ASCII addresses: the same language as email
    for text in ["a@b.com", "a..b@c.com", '"x y"@ex.org', "a@[1.2.3.4]"]:
        assert ok("idn-email", text) == ok("email", text), text
