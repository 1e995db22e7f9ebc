"""GBNF (llama.cpp's grammar format) to IR.

    root   ::= object
    object ::= "{" ws ( pair ( "," ws pair )* )? "}"
    name   ::= [a-zA-Z_] [a-zA-Z0-9_-]{0,31}   # comments run to the end of the line

Literals "..." and classes [...] / [^...] take the escapes \\n \\r \\t \\\\ \\" \\] \\[ \\-
\\xHH \\uHHHH \\UHHHHHHHH; `.` is any character; postfix `* + ? {m} {m,} {m,n}`; groups `( )`.
"""
from __future__ import annotations

import re

from formwork.grammar.cfg.lark_frontend import EbnfSyntaxError
from formwork.grammar.ir import EMPTY, Grammar, Node, RuleRef, alt, lit, repeat, seq
from formwork.grammar.ir_chars import any_char, chars

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_RULE_START = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\s*::=")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "]": "]", "[": "[", "-": "-",
            "/": "/", "0": "\0"}
_HEX = {"x": 2, "u": 4, "U": 8}


def looks_like_gbnf(text: str) -> bool:
    return re.search(r"^\s*[A-Za-z_][A-Za-z0-9_-]*\s*::=", text, re.M) is not None


class _Parser:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def error(self, message: str) -> EbnfSyntaxError:
        line = self.s.count("\n", 0, self.i) + 1
        return EbnfSyntaxError(f"GBNF: {message} at line {line}")

    def skip(self) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
            elif c.isspace():
                self.i += 1
            else:
                break

    def rules(self) -> dict[str, Node]:
        out: dict[str, Node] = {}
        self.skip()
        while self.i < len(self.s):
            m = _NAME.match(self.s, self.i)
            if not m:
                raise self.error("expected a rule name")
            self.i = m.end()
            self.skip()
            if not self.s.startswith("::=", self.i):
                raise self.error(f"expected '::=' after {m.group()!r}")
            self.i += 3
            if m.group() in out:
                raise self.error(f"rule {m.group()!r} is defined twice")
            out[m.group()] = self.alternatives()
            self.skip()
        return out

    def alternatives(self) -> Node:
        options = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            options.append(self.sequence())
        return alt(*options)

    def peek(self) -> str:
        self.skip()
        return self.s[self.i] if self.i < len(self.s) else ""

    def sequence(self) -> Node:
        items: list[Node] = []
        while True:
            c = self.peek()
            if not c or c in "|)" or _RULE_START.match(self.s, self.i):
                return seq(*items) if items else EMPTY
            items.append(self.postfix(self.primary()))

    def primary(self) -> Node:
        c = self.s[self.i]
        if c == '"':
            self.i += 1
            text = []
            while self.i < len(self.s) and self.s[self.i] not in '"\n':
                text.append(self.char())
            if self.i >= len(self.s) or self.s[self.i] == "\n":
                raise self.error("unterminated string literal")
            self.i += 1
            return lit("".join(text))
        if c == "[":
            return self.char_class()
        if c == ".":
            self.i += 1
            return any_char()
        if c == "(":
            self.i += 1
            node = self.alternatives()
            if self.peek() != ")":
                raise self.error("missing ')'")
            self.i += 1
            return node
        m = _NAME.match(self.s, self.i)
        if not m:
            raise self.error(f"unexpected {c!r}")
        self.i = m.end()
        return RuleRef(m.group())

    def char(self) -> str:
        c = self.s[self.i]
        self.i += 1
        if c != "\\":
            return c
        if self.i >= len(self.s):
            raise self.error("dangling escape")
        e = self.s[self.i]
        self.i += 1
        if e in _HEX:
            digits = self.s[self.i:self.i + _HEX[e]]
            if len(digits) != _HEX[e] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"bad \\{e} escape")
            self.i += _HEX[e]
            return chr(int(digits, 16))
        if e not in _ESCAPES:
            raise self.error(f"unknown escape \\{e}")
        return _ESCAPES[e]

    def char_class(self) -> Node:
        self.i += 1
        negate = self.s.startswith("^", self.i)
        self.i += negate
        ranges: list[tuple[str, str]] = []
        while self.i < len(self.s) and self.s[self.i] != "]":
            lo = self.char()
            hi = lo
            if self.s.startswith("-", self.i) and not self.s.startswith("-]", self.i):
                self.i += 1
                hi = self.char()
            ranges.append((lo, hi))
        if self.i >= len(self.s):
            raise self.error("unterminated character class")
        self.i += 1
        return chars(ranges, negate=negate)

    def postfix(self, node: Node) -> Node:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "*":
                node = repeat(node, 0, None)
            elif c == "+":
                node = repeat(node, 1, None)
            elif c == "?":
                node = repeat(node, 0, 1)
            elif c == "{":
                m = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}").match(self.s, self.i)
                if not m:
                    raise self.error("bad repetition")
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                if hi is not None and hi < lo:
                    raise self.error(f"bad repetition bounds {m.group()}")
                node = repeat(node, lo, hi)
                self.i = m.end()
                continue
            else:
                return node
            self.i += 1
        return node


def gbnf_grammar(text: str, start: str | None = None) -> Grammar:
    """The IR Grammar of a GBNF grammar text (start: `root` unless given)."""
    rules = _Parser(text).rules()
    start = start or "root"
    if start not in rules:
        raise EbnfSyntaxError(f"GBNF: start rule {start!r} is not defined")
    return Grammar(rules, start)
