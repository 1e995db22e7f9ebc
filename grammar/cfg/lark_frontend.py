"""Lark grammars to IR: lark's own loader gives the BNF rules and the terminal patterns.

Every terminal becomes its regular IR; `%ignore`d terminals may appear between any two
symbols of a rule and around the start rule.  The language is the grammar's with each
terminal replaced by its language (lark's `dynamic_complete` Earley semantics: any split of
the text into terminals is allowed).
"""
from __future__ import annotations

import re

import lark
from lark.lexer import PatternStr
from lark.load_grammar import load_grammar

from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import EMPTY, Grammar, Node, RuleRef, alt, lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.regex_parser import regex


class EbnfSyntaxError(GrammarError):
    """The grammar text is not valid Lark or GBNF."""


_LOOKAROUND = re.compile(r"\(\?<?[=!]")
# common.lark's ESCAPED_STRING needs a lookbehind; this is the same language without one
_LOOKAROUND_FREE = {
    r'".*?(?<!\\)(\\\\)*?"': r'"(?:[^"\\\n]|\\[^\n])*"',
}
START_RULE = "<lark start>"


def _terminal_node(pattern: lark.lexer.Pattern, name: str) -> Node:
    flags = set(pattern.flags)
    if isinstance(pattern, PatternStr):
        if flags - {"i"}:
            raise GrammarError(f"terminal {name}: flags {sorted(flags)} are not supported")
        if "i" in flags:
            return seq(*(chars([c.lower(), c.upper()]) if c.lower() != c.upper() else lit(c)
                         for c in pattern.value))
        return lit(pattern.value)
    if flags:
        raise GrammarError(f"terminal {name}: regex flags {sorted(flags)} are not supported")
    source = _LOOKAROUND_FREE.get(pattern.value, pattern.value)
    if _LOOKAROUND.search(source):  # the regex parser would confine it to the terminal's own text
        raise GrammarError(f"terminal {name}: lookaround assertions are not supported in terminals "
                           "(a lexer's lookahead sees the input past the terminal)")
    try:
        return regex(source)
    except GrammarError as exc:
        raise GrammarError(f"terminal {name}: {exc}") from None


def lark_grammar(text: str, start: str = "start") -> Grammar:
    """The IR Grammar of a Lark grammar (rules, terminals, %ignore, %import common.*)."""
    try:  # lark's loader only: rules and terminal patterns, no parser tables
        loaded, _ = load_grammar(text, "<grammar>", [], False)
        terminal_defs, bnf_rules, ignore_names = loaded.compile([start], set())
    except (lark.exceptions.LarkError, ValueError, KeyError) as exc:
        raise EbnfSyntaxError(f"invalid Lark grammar: {type(exc).__name__}: {exc}") from None
    terminals = {t.name: _terminal_node(t.pattern, t.name) for t in terminal_defs}
    missing = [name for name in ignore_names if name not in terminals]
    if missing:
        raise EbnfSyntaxError(f"invalid Lark grammar: %ignore names undefined terminals {missing}")
    ignored = [terminals[name] for name in ignore_names]
    gap = repeat(alt(*ignored), 0, None) if ignored else EMPTY

    def symbol(sym) -> Node:
        if sym.is_term:
            return terminals[sym.name]
        return RuleRef(sym.name)

    bodies: dict[str, list[Node]] = {}
    for rule in bnf_rules:
        parts: list[Node] = []
        for i, sym in enumerate(rule.expansion):
            if i:
                parts.append(gap)
            parts.append(symbol(sym))
        bodies.setdefault(rule.origin.name, []).append(seq(*parts))
    rules: dict[str, Node] = {name: alt(*options) for name, options in bodies.items()}
    if start not in rules:
        raise EbnfSyntaxError(f"start rule {start!r} is not defined")
    rules[START_RULE] = seq(gap, RuleRef(start), gap)
    return Grammar(rules, START_RULE)
