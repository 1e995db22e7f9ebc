"""Inlining rules keeps shared marks (`shared_nodes.share`): a marked node rebuilt with a rule's
body inside stays marked, so the NFA builder still builds it once per end state.  Rebuilt through
`map_children`, the mark `repeat(x, 1, 1)` became plain `x` and every path built its own copy:
Swagger 1.2's operationObject.json (member lists under a rule) needed more than 500k NFA states.

The grammars here are a chain of `DEPTH` diamonds, each two ways into the next, over a rule at the
bottom: (x|y)^DEPTH z, 2^DEPTH paths built as a tree, DEPTH diamonds shared."""
from __future__ import annotations

import re
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.automaton import inline_rules  # noqa: E402
from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.ir import Grammar, Node, RuleRef, alt, lit, seq  # noqa: E402
from formwork.grammar.shared_nodes import is_shared, share  # noqa: E402

DEPTH = 24  # 2^24 paths: far past the default 500k NFA states unless shared


def diamonds(depth: int) -> Node:
    """(x|y)^depth followed by the rule `leaf`, each step shared."""
    node: Node = RuleRef("leaf")
    for _ in range(depth):
        node = share(alt(seq(lit("x"), node), seq(lit("y"), node)))
    return node


def regular() -> Grammar:
    """The regular chain.  Built when used, not at import: marks are evicted oldest first once the
    process has made 65,536 (`shared_nodes._MAX_MARKS`), and an evicted mark is built per path."""
    return Grammar({"start": seq(lit("<"), diamonds(DEPTH)), "leaf": lit("z")}, "start")


def recursive() -> Grammar:
    """The recursive one: the diamonds become a terminal of the context-free grammar
    (`cfg.productions`); built when used, as `regular`."""
    return Grammar({"start": alt(lit("0"), seq(lit("("), RuleRef("start"), lit(")")), diamonds(DEPTH)),
                    "leaf": lit("z")}, "start")


ORACLES = {"regular": re.compile(rf"<[xy]{{{DEPTH}}}z"),
           "recursive": re.compile(rf"(\(*)(0|[xy]{{{DEPTH}}}z)(\)*)")}


def test_inline_rules_keeps_a_rebuilt_mark_shared():
    inlined = inline_rules(Grammar({"start": share(seq(lit("{"), RuleRef("v"), lit("}"))),
                                    "v": lit("1")}, "start"))
    assert is_shared(inlined) and inlined.item == seq(lit("{"), lit("1"), lit("}"))
    untouched = share(seq(lit("["), lit("2")))  # no reference below: the node itself
    assert inline_rules(Grammar({"start": untouched}, "start")) is untouched


def _compiled(name: str):
    grammar = regular() if name == "regular" else recursive()
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())
    return compiler.compile_grammar(grammar)


def _accepts(compiled, text: str) -> bool:
    m = compiled.matcher(max_step_seconds=None)
    return m.accept_string(text) and m.can_terminate()


COMPILED: dict[str, object] = {}


@settings(deadline=None, max_examples=60)
@given(st.sampled_from(sorted(ORACLES)), st.integers(0, 3),
       st.lists(st.sampled_from("xy"), min_size=DEPTH - 2, max_size=DEPTH + 1),
       st.sampled_from(["z", "", "zz", "y"]))
def test_shared_marks_under_rules_compile_within_the_default_budget(name, nest, steps, end):
    # fails without the marks kept: 2^24 paths need far more than the 500k NFA-state budget
    if name not in COMPILED:
        COMPILED[name] = _compiled(name)
    body = "".join(steps) + end
    text = "<" + body if name == "regular" else "(" * nest + body + ")" * nest
    oracle = ORACLES[name]
    match = oracle.fullmatch(text)
    expected = match is not None and (name == "regular" or len(match.group(1)) == len(match.group(3)))
    assert _accepts(COMPILED[name], text) == expected
