"""URI, IRI and URI Template formats as regexes over the decoded string value.

* ``uri`` / ``uri-reference``: RFC 3986's ``URI`` and ``URI-reference`` (section 3 and 4.1);
* ``iri`` / ``iri-reference``: RFC 3987's ``IRI`` and ``IRI-reference``: the same shapes, with
  ``ucschar`` (non-ASCII letters and symbols outside the surrogates, private use and
  noncharacters) allowed wherever RFC 3986 allows an unreserved character, and ``iprivate``
  (private-use code points) allowed in the query only; IP literals stay ASCII;
* ``uri-template``: RFC 6570's ``URI-Template`` (section 2): literals (``'`` included, as RFC
  6570's verified erratum 6937 reads) and expressions ``{`` [operator] varspec list ``}``, each
  varspec a dotted varname of ALPHA / DIGIT / ``_`` / pct-encoded characters with an optional
  ``:prefix`` (1 to 9999, no leading zero) or ``*`` (explode) modifier.

All of these are exact regular languages (no subset): every structural rule of the ABNFs is
regular, and none has a length limit.
"""
from __future__ import annotations

HEX = "[0-9a-fA-F]"

_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
IPV4 = f"{_OCTET}(?:\\.{_OCTET}){{3}}"


def _ipv6() -> str:
    h = f"{HEX}{{1,4}}"
    ls32 = f"(?:{h}:{h}|{IPV4})"
    alts = [f"(?:{h}:){{6}}{ls32}", f"::(?:{h}:){{5}}{ls32}", f"(?:{h})?::(?:{h}:){{4}}{ls32}"]
    for k in range(1, 7):
        before = f"(?:(?:{h}:){{0,{k}}}{h})?"
        after = {1: f"(?:{h}:){{3}}{ls32}", 2: f"(?:{h}:){{2}}{ls32}", 3: f"{h}:{ls32}",
                 4: ls32, 5: h, 6: ""}[k]
        alts.append(f"{before}::{after}")
    return "(?:" + "|".join(alts) + ")"


IPV6 = _ipv6()

# RFC 3987 section 2.2: ucschar (planes 1-13 less their last two code points, plane 14 from
# E1000) and iprivate, as regex character-class ranges of the raw code points.
UCSCHAR = ("\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
           + "".join(f"{chr(p << 16)}-{chr((p << 16) | 0xfffd)}" for p in range(1, 14))
           + "\U000e1000-\U000efffd")
IPRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"

_UNRESERVED = "A-Za-z0-9\\-._~"
_SUB_DELIMS = "!$&'()*+,;="
_PCT = f"%{HEX}{{2}}"
_SCHEME = "[A-Za-z][A-Za-z0-9+.\\-]*"
_IP_LITERAL = f"\\[(?:{IPV6}|[vV]{HEX}+\\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\\]"


def _references(ucs: str, private: str) -> tuple[str, str]:
    """RFC 3986's (absolute, reference) regexes with `ucs` added to the unreserved characters
    and `private` to the query's (both empty for URIs, RFC 3987's ranges for IRIs)."""
    unreserved = _UNRESERVED + ucs
    pchar = f"(?:[{unreserved}{_SUB_DELIMS}:@]|{_PCT})"
    userinfo = f"(?:[{unreserved}{_SUB_DELIMS}:]|{_PCT})*"
    reg_name = f"(?:[{unreserved}{_SUB_DELIMS}]|{_PCT})*"
    authority = f"(?:{userinfo}@)?(?:{_IP_LITERAL}|{reg_name})(?::[0-9]*)?"
    segment = f"{pchar}*"
    path_abempty = f"(?:/{segment})*"
    path_absolute = f"/(?:{pchar}+(?:/{segment})*)?"
    path_rootless = f"{pchar}+(?:/{segment})*"
    path_noscheme = f"(?:[{unreserved}{_SUB_DELIMS}@]|{_PCT})+(?:/{segment})*"
    fragment = f"(?:{pchar}|[/?])*"
    query = f"(?:{pchar}|[/?{private}])*" if private else fragment
    tail = f"(?:\\?{query})?(?:#{fragment})?"
    absolute = f"{_SCHEME}:(?://{authority}{path_abempty}|{path_absolute}|{path_rootless})?{tail}"
    relative = f"(?://{authority}{path_abempty}|{path_absolute}|{path_noscheme})?{tail}"
    return absolute, f"(?:{absolute}|{relative})"


URI, URI_REFERENCE = _references("", "")
IRI, IRI_REFERENCE = _references(UCSCHAR, IPRIVATE)

# RFC 6570 section 2: literal characters are the printable ASCII less SP " % < > \ ^ ` { | },
# plus ucschar, iprivate and pct-encoded triplets.
_TEMPLATE_LITERAL = (f"(?:[\\x21\\x23\\x24\\x26-\\x3b\\x3d\\x3f-\\x5b\\x5d\\x5f\\x61-\\x7a\\x7e"
                     f"{UCSCHAR}{IPRIVATE}]|{_PCT})")
_VARCHAR = f"(?:[A-Za-z0-9_]|{_PCT})"
_VARSPEC = f"{_VARCHAR}(?:\\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\\*)?"
_EXPRESSION = f"\\{{[+#./;?&=,!@|]?{_VARSPEC}(?:,{_VARSPEC})*\\}}"
URI_TEMPLATE = f"(?:{_TEMPLATE_LITERAL}|{_EXPRESSION})*"
