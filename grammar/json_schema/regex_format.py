"""The `regex` format as a regular language: a subset of the regexes that both ECMA-262 (with or
without the `u` flag) and Python's `re` accept, so that every accepted string passes jsonschema's
check (`re.compile`) and is a valid ECMA-262 pattern.

Which regexes are valid is not a regular language (groups nest), and some valid ones are left out
to stay sound for both flavours; what is kept:

* literal characters except the syntax characters ``^ $ \\ . * + ? ( ) [ ] { } |``; ``.``;
* escapes of a syntax character or ``/``, and ``\\d \\D \\w \\W \\s \\S \\n \\r \\t \\f \\v``;
* classes ``[...]`` / ``[^...]`` of one or more items: characters (not ``\\ [ ] - & ~ |``, and
  not ``^`` first: Python reads ``[^]`` as an unterminated class),
  the escapes above plus ``\\-``, and ascending ranges within digits, lower or upper case letters;
* groups ``( )`` and ``(?: )`` nested at most `MAX_GROUP_DEPTH` deep, alternation, ``^`` and ``$``;
* one quantifier per atom (``* + ? {n} {n,} {m,n}``, lazy or not) with counts of at most 4 digits,
  and in ``{m,n}`` either both counts one digit with m <= n, or m one digit and n 2-4 digits.
"""
from __future__ import annotations

MAX_GROUP_DEPTH = 3

_LITERAL = "[^\\\\^$.*+?()\\[\\]{}|]"
_ESCAPE = "\\\\[\\\\^$.*+?()\\[\\]{}|/dDwWsSnrtfv]"
_CLASS_CHAR = "[^\\\\\\[\\]\\-&~|]"
_CLASS_ESCAPE = "\\\\[\\\\^$.*+?()\\[\\]{}|/\\-dDwWsSnrtfv]"


def _ranges() -> str:
    """Ascending ranges lo-hi within 0-9, a-z or A-Z."""
    parts = []
    for first, last in (("0", "9"), ("a", "z"), ("A", "Z")):
        for lo in range(ord(first), ord(last) + 1):
            hi = chr(lo) if lo == ord(last) else f"[{chr(lo)}-{last}]"
            parts.append(f"{chr(lo)}-{hi}")
    return "(?:" + "|".join(parts) + ")"


def _quantifier() -> str:
    counts = "|".join(f"{m},[{m}-9]" for m in range(10))
    braces = f"\\{{(?:[0-9]{{1,4}},?|{counts}|[0-9],[1-9][0-9]{{1,3}})\\}}"
    return f"(?:(?:[*+?]|{braces})\\??)"


def regex_format(max_depth: int = MAX_GROUP_DEPTH) -> str:
    """The language with groups nested at most `max_depth` deep."""
    item = f"(?:{_ranges()}|{_CLASS_CHAR}|{_CLASS_ESCAPE})"
    first = f"(?:{_ranges()}|{_CLASS_CHAR[:-1]}^]|{_CLASS_ESCAPE})"  # `[^]`: `]` literal in Python
    char_class = f"\\[\\^?{first}{item}*\\]"
    quantifier = _quantifier()
    simple = f"(?:{_LITERAL}|\\.|{_ESCAPE}|{char_class})"
    alternation = ""
    for depth in range(max_depth + 1):
        atom = simple if depth == 0 else f"(?:{simple}|\\((?:\\?:)?{alternation}\\))"
        # an alternation is any run of pieces, anchors and `|` (each side may be empty)
        alternation = f"(?:{atom}{quantifier}?|\\^|\\$|\\|)*"
    return alternation


REGEX_FORMAT = regex_format()
