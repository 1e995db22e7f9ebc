"""Regular expressions (the ECMAScript/Python common subset) to grammar IR.

Supported: literals, escapes (\\n \\t \\r \\f \\v \\0 \\xHH \\uHHHH \\u{H..} \\UHHHHHHHH and escaped
punctuation), classes `[...]` with negation and ranges, `\\d \\w \\s \\D \\W \\S`, Unicode property
escapes `\\p{..} \\P{..}` (general categories; see `unicode_properties`), `.`,
quantifiers `* + ? {m} {m,} {m,n}` and their lazy variants (same language), groups
`( )`, `(?: )`, named groups `(?P<n> )` / `(?<n> )`, alternation, and `^` / `$` anchors.  At the
start / end of a top-level alternative they only drop the implicit ``.*`` of a search; anywhere else
(inside a lookahead: ``^(?=[a-z]+$).*``, or mid-branch: ``a$b`` matches nothing) they are the
assertions ``(?<![^])`` / ``(?![^])`` (ECMAScript without the `m` flag: the start / end of input).

Semantics (chosen to match JSON Schema's ECMA-262 flavour):
- `\\d` is `[0-9]` and `\\w` is `[A-Za-z0-9_]` (ASCII, as in ECMAScript without the `u`/`v` flags).
- `\\s` is ECMAScript's white space and line terminators (tab, LF, VT, FF, CR, space, NBSP,
  U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF).
- `.` is any character except `\\n` (Python's rule).
- `$` means the very end of the string (ECMAScript), not "before a final newline" (Python).

Lookaheads and lookbehinds (``(?=X) (?!X) (?<=X) (?<!X)``) become intersections and complements
(see `regex_lookaround` for the few placements left out).  Backreferences, word boundaries, inline
flags and possessive quantifiers raise `UnsupportedRegexError`; malformed patterns raise
`RegexSyntaxError`.
"""
from __future__ import annotations

from functools import lru_cache

from formwork.grammar.errors import RegexSyntaxError, UnsupportedRegexError
from formwork.grammar.ir import EMPTY, Node, alt, lit
from formwork.grammar.ir_chars import any_text, chars
from formwork.grammar.regex_lookaround import (END_OF_INPUT, START_OF_INPUT, Look, make_alt, make_repeat,
                                               make_seq, resolve)
from formwork.grammar.unicode_properties import property_ranges

CodeRanges = list[tuple[int, int]]

DIGIT: CodeRanges = [(0x30, 0x39)]
WORD: CodeRanges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
SPACE: CodeRanges = [
    (0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF),
]
_CLASS_ESCAPES = {"d": (DIGIT, False), "D": (DIGIT, True), "w": (WORD, False),
                  "W": (WORD, True), "s": (SPACE, False), "S": (SPACE, True)}
_SIMPLE_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "f": 0x0C, "v": 0x0B, "a": 0x07}
_MAX_REPEAT = 100_000

# Groups and classes already parsed, by their text: parsing one reads nothing outside it, so its
# IR is the same wherever it occurs (generated patterns such as numeric ranges repeat them).
_MAX_MEMO = 8192
_GROUPS: dict[str, Node] = {}
_CLASSES: dict[str, Node] = {}


def _remember(memo: dict[str, Node], text: str, node: Node) -> None:
    if len(memo) >= _MAX_MEMO:
        memo.clear()
    memo[text] = node


def _group_ends(p: str) -> dict[int, int]:
    """The likely closing parenthesis of each group (escapes and classes skipped).  Only a hint:
    a memoised group is reused only if the text up to it is exactly one parsed before."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    i, n = 0, len(p)
    while i < n:
        c = p[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if p.startswith("^", j):
                j += 1
            if p.startswith("]", j):
                j += 1
            while j < n and p[j] != "]":
                j += 2 if p[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            ends[stack.pop()] = i
        i += 1
    return ends


def _invert(ranges: CodeRanges) -> CodeRanges:
    out, nxt = [], 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= 0x10FFFF:
        out.append((nxt, 0x10FFFF))
    return out


class _Parser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0
        self.ends = _group_ends(pattern) if "(" in pattern else {}

    # -- low level
    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.p[j] if j < len(self.p) else None

    def syntax(self, msg: str, pos: int | None = None) -> RegexSyntaxError:
        return RegexSyntaxError(msg, self.p, self.i if pos is None else pos)

    def unsupported(self, msg: str, pos: int | None = None) -> UnsupportedRegexError:
        return UnsupportedRegexError(msg, self.p, self.i if pos is None else pos)

    # -- grammar
    def parse(self, search: bool) -> Node:
        branches = []
        while True:
            start_anchor = False
            if self.peek() == "^":
                self.i += 1
                start_anchor = True
            node, end_anchor = self.sequence(top=True)
            before = EMPTY if start_anchor or not search else any_text()
            after = EMPTY if end_anchor or not search else any_text()
            branches.append(resolve(node, before, after, self.unsupported))
            if self.peek() == "|":
                self.i += 1
                continue
            if self.peek() == ")":
                raise self.syntax("unbalanced ')'")
            break
        return alt(*branches)

    def alternation(self) -> Node:
        branches = [self.sequence(top=False)[0]]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence(top=False)[0])
        return make_alt(*branches)

    def sequence(self, top: bool) -> tuple[Node, bool]:
        items: list[Node] = []
        while True:
            c = self.peek()
            if c is None or c in "|)":
                return make_seq(*items), False
            if c == "$":
                self.i += 1
                nxt = self.peek()
                if top and (nxt is None or nxt == "|"):
                    return make_seq(*items), True
                items.append(END_OF_INPUT)
                continue
            if c == "^":
                self.i += 1
                items.append(START_OF_INPUT)
                continue
            items.append(self.quantified())

    def quantified(self) -> Node:
        node = self.atom()
        while True:
            c = self.peek()
            if c == "*":
                lo, hi = 0, None
                self.i += 1
            elif c == "+":
                lo, hi = 1, None
                self.i += 1
            elif c == "?":
                lo, hi = 0, 1
                self.i += 1
            elif c == "{":
                bounds = self.braces()
                if bounds is None:
                    return node
                lo, hi = bounds
            else:
                return node
            if self.peek() == "?":  # lazy: same language
                self.i += 1
            elif self.peek() == "+":
                raise self.unsupported("possessive quantifiers are not supported")
            node = make_repeat(node, lo, hi)

    def braces(self) -> tuple[int, int | None] | None:
        """Parse {m}, {m,}, {m,n}; None (and no input consumed) if '{' is a literal."""
        j = self.i + 1
        end = self.p.find("}", j)
        if end < 0:
            return None
        body = self.p[j:end]
        parts = body.split(",")
        if len(parts) == 2 and not parts[0] and parts[1].isdigit():
            raise self.unsupported(f"'{{,{parts[1]}}}' is {{0,{parts[1]}}} in Python but literal text in "
                                   "ECMAScript; write {0,n} or escape the brace")
        if len(parts) > 2 or not parts[0].isdigit() or (len(parts) == 2 and parts[1] and not parts[1].isdigit()):
            return None
        lo = int(parts[0])
        hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
        if hi is not None and hi < lo:
            raise self.syntax(f"bad quantifier {{{body}}}: max below min")
        if max(lo, hi or 0) > _MAX_REPEAT:
            raise self.unsupported(f"repetition count above {_MAX_REPEAT}")
        self.i = end + 1
        return lo, hi

    def atom(self) -> Node:
        c = self.peek()
        if c in ("*", "+", "?"):
            raise self.syntax("nothing to repeat")
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return chars([(0x0A, 0x0A)], negate=True)
        if c == "\\":
            ranges, neg = self.escape(in_class=False)
            return chars(ranges, negate=neg)
        self.i += 1
        return lit(c)

    def group(self) -> Node:
        start = self.i
        end = self.ends.get(start)
        if end is not None:
            got = _GROUPS.get(self.p[start:end + 1])
            if got is not None:
                self.i = end + 1
                return got
        self.i += 1
        if self.peek() == "?":
            two = self.p[self.i:self.i + 3]
            if two.startswith("?:"):
                self.i += 2
            elif two.startswith("?P<") or (two.startswith("?<") and two[2:3] not in ("=", "!")):
                self.i += 3 if two.startswith("?P<") else 2
                end = self.p.find(">", self.i)
                name = self.p[self.i:end] if end >= 0 else ""
                if end < 0 or not name.isidentifier():
                    raise self.syntax("bad group name", start)
                self.i = end + 1
            elif two.startswith(("?=", "?!", "?<=", "?<!")):
                return self.lookaround(start)
            elif two.startswith("?P="):
                raise self.unsupported("backreferences are not supported", start)
            else:
                raise self.unsupported("inline flags / extension groups are not supported", start)
        node = self.alternation()
        if self.peek() != ")":
            raise self.syntax("missing ')'", start)
        self.i += 1
        if isinstance(node, Node):
            _remember(_GROUPS, self.p[start:self.i], node)
        return node

    def lookaround(self, start: int) -> Look:
        """``(?=...)``, ``(?!...)``, ``(?<=...)`` or ``(?<!...)`` at `start` (self.i at its '?')."""
        behind = self.p.startswith("?<", self.i)
        negate = self.p[self.i + 1 + behind] == "!"
        self.i += 2 + behind
        body = self.alternation()
        if self.peek() != ")":
            raise self.syntax("missing ')'", start)
        self.i += 1
        return Look(not behind, negate, body)

    def escape(self, in_class: bool) -> tuple[CodeRanges, bool]:
        """Parse an escape at self.i (a backslash); return (code ranges, negated)."""
        start = self.i
        self.i += 1
        c = self.peek()
        if c is None:
            raise self.syntax("pattern ends with a backslash", start)
        self.i += 1
        if c in _CLASS_ESCAPES:
            ranges, neg = _CLASS_ESCAPES[c]
            return list(ranges), neg
        if c in _SIMPLE_ESCAPES:
            cp = _SIMPLE_ESCAPES[c]
            return [(cp, cp)], False
        if c == "b" and in_class:
            return [(0x08, 0x08)], False
        if c in "bBAZzG":
            raise self.unsupported(f"assertion \\{c} is not supported", start)
        if c == "k" or (c.isdigit() and c != "0"):
            raise self.unsupported("backreferences are not supported", start)
        if c == "0":
            return [(0, 0)], False
        if c == "x":
            return self.hex_escape(2, start)
        if c == "u":
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1:end] if end > 0 else ""
                if not digits or any(d not in "0123456789abcdefABCDEF" for d in digits):
                    raise self.syntax("bad \\u{...} escape", start)
                self.i = end + 1
                return self.code(int(digits, 16), start)
            return self.hex_escape(4, start)
        if c == "U":
            return self.hex_escape(8, start)
        if c in "pP":
            return self.property_escape(negated=c == "P", start=start)
        if c.isalnum():
            raise self.syntax(f"unknown escape \\{c}", start)
        return [(ord(c), ord(c))], False

    def property_escape(self, negated: bool, start: int) -> tuple[CodeRanges, bool]:
        """`\\p{Name}` / `\\P{Name}` (self.i after the letter): see `unicode_properties`."""
        end = self.p.find("}", self.i)
        if self.peek() != "{" or end < 0:
            raise self.syntax("a Unicode property escape needs braces: \\p{Name}", start)
        name = self.p[self.i + 1:end]
        ranges = property_ranges(name)
        if ranges is None:
            raise self.unsupported(f"Unicode property \\p{{{name}}} is not supported (general categories, "
                                   "Any, ASCII and Assigned are; scripts are not)", start)
        self.i = end + 1
        return ranges, negated

    def hex_escape(self, n: int, start: int) -> tuple[CodeRanges, bool]:
        digits = self.p[self.i:self.i + n]
        if len(digits) != n or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise self.syntax(f"bad escape: expected {n} hex digits", start)
        self.i += n
        return self.code(int(digits, 16), start)

    def code(self, cp: int, start: int) -> tuple[CodeRanges, bool]:
        if cp > 0x10FFFF:
            raise self.syntax("code point out of range", start)
        return [(cp, cp)], False

    def char_class(self) -> Node:
        start = self.i
        end = self.p.find("]", start + 2)  # the first "]" closes the class, unless escaped
        if end > 0:
            got = _CLASSES.get(self.p[start:end + 1])
            if got is not None:
                self.i = end + 1
                return got
        self.i += 1
        negate = False
        if self.peek() == "^":
            negate = True
            self.i += 1
        ranges: CodeRanges = []
        first = True
        while True:
            c = self.peek()
            if c is None:
                raise self.syntax("unterminated character class", start)
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            lo_ranges, lo_neg = self.class_atom()
            if (self.peek() == "-" and self.peek(1) not in (None, "]")
                    and len(lo_ranges) == 1 and not lo_neg and lo_ranges[0][0] == lo_ranges[0][1]):
                dash = self.i
                self.i += 1
                hi_ranges, hi_neg = self.class_atom()
                if hi_neg or len(hi_ranges) != 1 or hi_ranges[0][0] != hi_ranges[0][1]:
                    raise self.syntax("bad character range", dash)
                lo, hi = lo_ranges[0][0], hi_ranges[0][0]
                if lo > hi:
                    raise self.syntax("bad character range: start above end", dash)
                ranges.append((lo, hi))
            else:
                ranges.extend(_invert(lo_ranges) if lo_neg else lo_ranges)
        node = chars(ranges, negate=negate)
        _remember(_CLASSES, self.p[start:self.i], node)
        return node

    def class_atom(self) -> tuple[CodeRanges, bool]:
        c = self.peek()
        if c == "\\":
            return self.escape(in_class=True)
        if c == "[" and self.peek(1) in (":", "=", "."):
            raise self.unsupported("POSIX bracket expressions are not supported")
        self.i += 1
        return [(ord(c), ord(c))], False


def parse_regex(pattern: str, search: bool = False) -> Node:
    """Parse `pattern` into IR; see the module docstring for the supported subset."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be str, got {type(pattern).__name__}")
    parser = _Parser(pattern)
    node = parser.parse(search)
    if parser.i != len(pattern):
        raise parser.syntax("unexpected character")
    return node


def regex(pattern: str, search: bool = False) -> Node:
    """Parse a regular expression (ECMAScript/Python common subset) into IR.

    search=False: the pattern must match the whole string; search=True: JSON Schema
    `pattern` semantics, i.e. a match anywhere unless anchored with ^ / $.  Parses are memoised
    process-wide (IR is immutable): schemas repeat patterns, and numeric ranges lower to regexes.
    """
    return _parse_regex(pattern, search)


@lru_cache(maxsize=4096)
def _parse_regex(pattern: str, search: bool) -> Node:
    return parse_regex(pattern, search=search)
