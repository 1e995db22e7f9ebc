"""formwork.grammar: constraints (regex, choice, IR grammars, JSON Schema, tagged regions) as token masks.

    vocab = Vocabulary.from_pretrained(tokenizer_or_path, vocab_size=None)
    g = compile_regex(r"\\d{3}-\\d{4}", vocab)
    m = g.matcher()
    bitmask = allocate_token_bitmask(batch, vocab.vocab_size)
    m.fill_next_token_bitmask(bitmask, index=0)
    m.accept_token(token_id)
"""
from __future__ import annotations

from typing import Any

from formwork.grammar.budget import CompileBudget
from formwork.grammar.compiler import (
    CompiledGrammar, GrammarCompiler, allocate_token_bitmask, compile_choice, compile_ebnf,
    compile_grammar, compile_regex,
)
from formwork.grammar.errors import (
    EmptyLanguageError, GrammarBudgetError, GrammarError, RecursionNotSupportedError, RegexSyntaxError, RollbackError,
    UndefinedRuleError, UnsupportedRegexError, VocabularyError,
)
from formwork.grammar.ir import Grammar
from formwork.grammar.matcher import Matcher
from formwork.grammar.vocabulary import Vocabulary

__all__ = [
    "CompileBudget", "CompiledGrammar", "EmptyLanguageError", "Grammar", "GrammarBudgetError", "GrammarCompiler",
    "GrammarError", "Matcher", "RecursionNotSupportedError", "RegexSyntaxError", "RollbackError",
    "UndefinedRuleError", "UnsupportedRegexError", "Vocabulary", "VocabularyError",
    "allocate_token_bitmask", "compile_choice", "compile_ebnf", "compile_grammar",
    "compile_regex", "compile_tags",
]


def __getattr__(name: str) -> Any:
    # JSON Schema lowering lives in a subpackage that imports this one; load it on first use.
    if name == "compile_json_schema":
        from formwork.grammar.json_schema import compile_json_schema

        return compile_json_schema
    if name == "compile_tags":
        from formwork.grammar.tags import compile_tags

        return compile_tags
    raise AttributeError(f"module 'formwork.grammar' has no attribute {name!r}")
