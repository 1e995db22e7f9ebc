"""`format` values as regular languages over the decoded string value.

Each supported format is a regex string (plus, for hostnames, length and A-label side conditions
applied as IR intersections in :func:`format_node`).  Where the exact rule is beyond a regular
language we stay *sound* and reject the hard cases:

* hostname: labels of up to 63 characters, as many as fit in 253 (`format_node` gives the labels,
  and the string lowering bounds the length, `HOSTNAME_MAX_LENGTH`, as it does ``maxLength``); IDNA A-labels
  (``xn--...``; any label with ``--`` in positions 3-4) are rejected, since validating Punycode and IDNA
  contextual rules is not regular in practice. Inside email and idn-hostname, where no string length bounds
  the name, at most 3 labels of up to 63 characters, 7 of up to 31 or 15 of up to 15 (always within 253);
* time / date-time: leap seconds (``:60``) are accepted only when the offset's minutes are 00, 15,
  30 or 45 and the time is 23:59 UTC;
* email: dot-atom or quoted local parts; domains are hostnames or ``[IPv4]`` / ``[IPv6:...]``
  literals (no general address literals);
* idn-hostname: the hostname language above, or 1 to 3 labels each an ASCII one (as above) or
  a short U-label of letters (see `idn_labels`); A-labels are rejected (their Punycode is not
  checked), and so are longer or other U-labels; every such name passes ``idna.encode``,
  jsonschema's check;
* idn-email: RFC 6531's addresses: email's shapes with any non-ASCII character also allowed in
  the local part (dot-atom and quoted); the domain as for idn-hostname;
* byte: RFC 4648 base64 with padding (length a multiple of 4, ``=`` only at the end), any pad bits;
* regex: a regular subset of the regexes both ECMA-262 and Python's ``re`` accept (see
  `regex_format`), so every accepted string passes jsonschema's ``re.compile`` check.
* uri, uri-reference, iri, iri-reference, uri-template: exact (see `uri_formats`).

Number formats (OpenAPI's format registry, applied to JSON numbers; other instance types pass, as
for every format): ``int32``, ``int64``, ``uint32`` and ``uint64`` are integer ranges, and a number
that is not an integer fails them (the registry defines each as an integer of that width, as
ajv-formats asserts; ``1.0`` is the integer 1 but the grammar spells integers canonically);
``float`` and ``double`` accept every number (the registry gives them no range).
"""
from __future__ import annotations

from formwork.grammar.ir import And, Node, Not, alt, lit, seq
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema.idn_labels import u_label
from formwork.grammar.json_schema.regex_format import REGEX_FORMAT
from formwork.grammar.json_schema.uri_formats import (
    HEX, IPV4, IPV6, IRI, IRI_REFERENCE, URI, URI_REFERENCE, URI_TEMPLATE)

_LEAP_YY = "(?:0[48]|[2468][048]|[13579][26])"
LEAP_YEAR = f"(?:[0-9]{{2}}{_LEAP_YY}|{_LEAP_YY}00)"
# Years 0001-9999: year 0000 is valid in RFC 3339 but not in Python's `date`, which jsonschema's
# `date` check uses.
_YEAR = "(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
DATE = (
    f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    f"|{LEAP_YEAR}-02-29)"
)

_HH = "(?:[01][0-9]|2[0-3])"
_MM = "[0-5][0-9]"
_FRAC = "(?:\\.[0-9]+)?"
_OFFSET = f"(?:[Zz]|[+-]{_HH}:{_MM})"


def _leap_second_times() -> str:
    """HH:MM:60 with an offset such that the UTC time is 23:59 (offset minutes 00/15/30/45)."""
    alts = [f"23:59:60{_FRAC}[Zz]"]
    for sign in (1, -1):
        for oh in range(24):
            for om in (0, 15, 30, 45):
                local = (23 * 60 + 59 + sign * (oh * 60 + om)) % (24 * 60)
                s = "+" if sign > 0 else "-"
                alts.append(f"{local // 60:02d}:{local % 60:02d}:60{_FRAC}\\{s}{oh:02d}:{om:02d}")
    return "(?:" + "|".join(alts) + ")"


TIME = f"(?:{_HH}:{_MM}:{_MM}{_FRAC}{_OFFSET}|{_leap_second_times()})"
DATE_TIME = f"{DATE}[Tt]{TIME}"

_DUR_TIME = "T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
_DUR_DATE = f"(?:[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:{_DUR_TIME})?"
DURATION = f"P(?:{_DUR_DATE}|{_DUR_TIME}|[0-9]+W)"

UUID = f"{HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}"


def _local_part(extra: str) -> str:
    """RFC 5322's dot-atom or quoted-string local part, `extra` (a character-class body) added
    to atext and qtext (RFC 6531 adds every non-ASCII character)."""
    atext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~" + extra + "-]"
    qtext = "[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e" + extra + "]"
    return f"(?:{atext}+(?:\\.{atext}+)*|\"(?:{qtext}|\\\\[\\x20-\\x7e])*\")"


#: Every Unicode scalar value past ASCII (RFC 6532's UTF8-non-ascii).
_NON_ASCII = "\u0080-\ud7ff\ue000-\U0010ffff"

_B64 = "[A-Za-z0-9+/]"
BYTE = f"(?:{_B64}{{4}})*(?:{_B64}{{2}}==|{_B64}{{3}}=)?"
JSON_POINTER = "(?:/(?:[^~/]|~[01])*)*"
RELATIVE_JSON_POINTER = f"(?:0|[1-9][0-9]*)(?:#|{JSON_POINTER})"

FORMAT_REGEXES: dict[str, str] = {
    "date": DATE, "time": TIME, "date-time": DATE_TIME, "duration": DURATION,
    "ipv4": IPV4, "ipv6": IPV6, "uuid": UUID, "uri": URI, "uri-reference": URI_REFERENCE,
    "iri": IRI, "iri-reference": IRI_REFERENCE, "uri-template": URI_TEMPLATE,
    "byte": BYTE, "regex": REGEX_FORMAT, "json-pointer": JSON_POINTER,
    "relative-json-pointer": RELATIVE_JSON_POINTER,
}

#: Integer formats as inclusive ranges (they constrain numbers; other instances pass).
INTEGER_FORMATS: dict[str, tuple[int, int]] = {
    "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1),
    "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1),
}
#: Number formats that accept every number.
ANY_NUMBER_FORMATS = frozenset({"float", "double"})


def _label(max_len: int) -> str:
    return f"[A-Za-z0-9](?:[A-Za-z0-9-]{{0,{max_len - 2}}}[A-Za-z0-9])?"


HOSTNAME_MAX_LENGTH = 253  # characters: the string lowering bounds a `format: hostname` string by it

# (max labels, max label length) pairs whose worst case stays within 253 characters: hostnames inside
# email and idn-hostname, where counting the total length would multiply those automata by 253.
_HOSTNAME_SHAPES = ((3, 63), (7, 31), (15, 15))
_A_LABEL = "(?:.*\\.)?[A-Za-z0-9]{2}--.*"


def _hostname_node() -> Node:
    """Hostnames: LDH labels, at most 253 chars in total, no A-labels (``??--``)."""
    shapes = [f"{_label(n)}(?:\\.{_label(n)}){{0,{k - 1}}}" for k, n in _HOSTNAME_SHAPES]
    return And(regex("(?:" + "|".join(shapes) + ")"), Not(regex(_A_LABEL)))


def _hostname_labels_node() -> Node:
    """Hostnames of any length: LDH labels of at most 63 characters, no A-labels; exact once the string's
    length is bounded by HOSTNAME_MAX_LENGTH."""
    return And(regex(f"{_label(63)}(?:\\.{_label(63)})*"), Not(regex(_A_LABEL)))


_LDH = "[A-Za-z0-9]"


def _idn_hostname_node() -> Node:
    """Hostnames, or 1 to 3 labels each a U-label (`idn_labels`) or an ASCII one of at most 63
    octets with no ``-`` in place 3."""
    label = regex(f"(?:{u_label()}|{_LDH}(?:{_LDH}|[A-Za-z0-9-]{_LDH}"
                  f"(?:[A-Za-z0-9-]{{0,59}}{_LDH})?)?)")
    dotted = [label]
    for _ in range(2):
        dotted.append(seq(dotted[-1], lit("."), label))
    return alt(_hostname_node(), *dotted)


def format_node(name: str) -> Node:
    """The decoded-value language of a supported format; KeyError for unsupported ones."""
    cached = _CACHE.get(name)
    if cached is not None:
        return cached
    if name == "hostname":
        node = _hostname_labels_node()
    elif name == "idn-hostname":
        node = _idn_hostname_node()
    elif name in ("email", "idn-email"):
        idn = name == "idn-email"
        node = seq(regex(_local_part(_NON_ASCII if idn else "")), lit("@"),
                   alt(_idn_hostname_node() if idn else _hostname_node(),
                       regex(f"\\[(?:{IPV4}|IPv6:{IPV6})\\]")))
    else:
        node = regex(FORMAT_REGEXES[name])
    _CACHE[name] = node
    return node


_CACHE: dict[str, Node] = {}

SUPPORTED = frozenset(FORMAT_REGEXES) | {"hostname", "email", "idn-hostname", "idn-email"}
"""The string formats: `format_node` knows each."""
NUMBER_FORMATS = frozenset(INTEGER_FORMATS) | ANY_NUMBER_FORMATS
"""The number formats (see `INTEGER_FORMATS`); they leave strings unconstrained."""
INEXACT = frozenset({"hostname", "email", "time", "date-time", "idn-hostname", "idn-email", "regex"})
"""Formats whose languages are stricter than the format (see above): their complements, as
``not`` or a ``oneOf`` exclusion would build them, would admit strings the format accepts."""
