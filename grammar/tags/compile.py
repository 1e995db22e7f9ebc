"""Compiling a `tags` spec (and a reasoning model's thinking before a constraint) for a vocabulary."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from formwork.grammar.cfg.ebnf import ebnf_grammar
from formwork.grammar.compiler import CompiledGrammar, GrammarCompiler, default_compiler
from formwork.grammar.errors import GrammarBudgetError, GrammarError
from formwork.grammar.ir import Grammar, Node, RuleRef, seq
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema.options import BOUNDED_NESTING_DEPTH, NestingOption
from formwork.grammar.json_schema.unique_arrays import embedded_node
from formwork.grammar.json_schema.cache import compile_cached
from formwork.grammar.regex_parser import regex
from formwork.grammar.tags.language import WHITESPACE, Region, tags_language
from formwork.grammar.automaton import inline_rules
from formwork.grammar.cfg import is_recursive
from formwork.grammar.tags.spec import TagSpecError, TagsSpec, parse_tags_spec

THINK_END = "</think>"


@dataclass
class Lowered:
    """IR (a `Grammar` when recursive) plus the warnings of lenient lowering."""

    node: Node | Grammar
    warnings: list[str] = field(default_factory=list)


def lower_tags(spec: TagsSpec) -> Lowered:
    """The IR of a checked spec; a constraint that does not compile is a `TagSpecError` naming it."""
    warnings: list[str] = []
    regions = []
    for i, tag in enumerate(spec.tags):
        body = _lower_constraint(tag.kind, tag.constraint, f"tags[{i}].{tag.kind}", warnings)
        regions.append(Region(tag.trigger, tag.begin, body, tag.end))
    text = None
    if spec.text is not None:
        where = f"text.{spec.text.kind}"
        # open values nest a bounded depth: the text must be regular to be kept free of the triggers
        text = _lower_constraint(spec.text.kind, spec.text.constraint, where, warnings, BOUNDED_NESTING_DEPTH)
        if isinstance(text, Grammar) and is_recursive(text):
            raise TagSpecError(where, "a recursive constraint cannot be kept free of the triggers (a text "
                                      "beside regions must be regular)")
        text = inline_rules(text) if isinstance(text, Grammar) else text
    node = tags_language(regions, spec.triggers, free_text=spec.free_text, at_least_one=spec.at_least_one,
                         stop_after_first=spec.stop_after_first, text=text)
    return Lowered(node, warnings)


def _lower_constraint(kind: str, constraint: Any, where: str, warnings: list[str],
                      nesting: NestingOption = "auto") -> Node | Grammar:
    try:
        if kind == "schema":
            lowered = lower_json_schema(constraint, max_nesting_depth=nesting)
            node = embedded_node(lowered, "inside a tagged region")
            warnings.extend(f"{where}: {w}" for w in lowered.warnings)
            return node
        if kind == "regex":
            return regex(constraint)
        return ebnf_grammar(constraint)
    except GrammarBudgetError:
        raise
    except GrammarError as exc:
        raise TagSpecError(where, str(exc)) from exc


def thinking_then(answer: Node | Grammar) -> Node | Grammar:
    """A reasoning model's output: free thinking (its `<think>` opening may be in the prompt or
    written first), `</think>`, optional whitespace, then `answer`; nothing may end it earlier."""
    if isinstance(answer, Grammar):
        answer = Grammar({**answer.rules, "<answer>": seq(WHITESPACE, RuleRef(answer.start))}, "<answer>")
    else:
        answer = seq(WHITESPACE, answer)
    return tags_language([Region(THINK_END, THINK_END, answer, "")], [THINK_END], at_least_one=True,
                         stop_after_first=True)


def compile_tags(spec: Any, vocab: Any, *, compiler: GrammarCompiler | None = None) -> CompiledGrammar:
    """Compile a `tags` spec (see `formwork.grammar.tags`) for `vocab`; cached by its canonical text."""
    parsed = parse_tags_spec(spec)
    return compile_lowered(("tags", parsed.key), lambda: lower_tags(parsed), vocab, compiler)


def compile_lowered(key: tuple, lower: Callable[[], Any], vocab: Any,
                    compiler: GrammarCompiler | None = None) -> CompiledGrammar:
    """Compile what `lower()` returns (`.node`, `.warnings`) with the shared sub-automata, cached by `key`."""
    try:
        return compile_cached(compiler or default_compiler(vocab), lambda: key, lower)
    except RecursionError as exc:  # a walk over the IR nested past Python's stack limit (as for a whole schema)
        raise GrammarBudgetError(f"the grammar nests too deeply to compile ({exc})") from None
