"""EBNF text (Lark syntax, or GBNF when rules are written `name ::= ...`) to IR."""
from __future__ import annotations

import re

from formwork.grammar.cfg.gbnf import gbnf_grammar, looks_like_gbnf
from formwork.grammar.cfg.lark_frontend import lark_grammar
from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import Grammar


def ebnf_grammar(text: str, start: str = "start") -> Grammar:
    """Parse a Lark or GBNF grammar; GBNF's conventional start rule `root` is used when
    `start` is left at "start" and the grammar has no rule of that name."""
    if not isinstance(text, str) or not text.strip():
        raise GrammarError("compile_ebnf needs a non-empty grammar text")
    if looks_like_gbnf(text):
        if start == "start" and not re.search(r"^\s*start\s*::=", text, re.M):
            return gbnf_grammar(text)
        return gbnf_grammar(text, start)
    return lark_grammar(text, start)
