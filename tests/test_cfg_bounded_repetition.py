"""Bounded repetitions of recursive parts in the context-free grammar (`cfg.productions`):
item{lo,hi} becomes a chain of nonterminals "hi - lo or fewer more items", linear in hi (it was one
production per count, quadratic), with the same language."""
from __future__ import annotations

from typing import Optional

from hypothesis import given, settings, strategies as st

from formwork.grammar.cfg import compile_cfg
from formwork.grammar.cfg.productions import lower_grammar
from formwork.grammar.ir import Grammar, RuleRef, alt, lit, repeat, seq


def nested(lo: int, hi: int) -> Grammar:
    """list := "(" ("a" | list){lo,hi} ")"."""
    return Grammar({"list": seq(lit("("), repeat(alt(lit("a"), RuleRef("list")), lo, hi), lit(")"))},
                   "list")


def in_language(text: str, lo: int, hi: int) -> bool:
    """Whether `text` is a `nested(lo, hi)` list (recursive descent)."""
    def parse(at: int) -> Optional[int]:  # the end of the list starting at `at`, or None
        if text[at:at + 1] != "(":
            return None
        at, count = at + 1, 0
        while text[at:at + 1] in ("a", "("):
            at = at + 1 if text[at] == "a" else parse(at)
            if at is None:
                return None
            count += 1
        return at + 1 if text[at:at + 1] == ")" and lo <= count <= hi else None

    return parse(0) == len(text)


trees = st.recursive(st.just("a"), lambda kids: st.lists(kids, max_size=5).map(lambda xs: "(" + "".join(xs) + ")"),
                     max_leaves=12).filter(lambda t: t != "a")
texts = st.one_of(trees, st.text(alphabet="(a)", max_size=12))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 3), st.integers(0, 3), texts)
def test_bounded_repetition_keeps_its_language(lo: int, extra: int, text: str):
    dfa = compile_cfg(nested(lo, lo + extra))
    assert dfa.accepts(text.encode()) == in_language(text, lo, lo + extra)


def test_bounded_repetition_grows_linearly():
    sizes = {hi: sum(len(p.rhs) + 1 for p in lower_grammar(nested(1, hi)).productions)
             for hi in (100, 200, 300, 499)}
    assert sizes[300] - sizes[200] == sizes[200] - sizes[100] and sizes[499] < 10 * 499, sizes
    dfa = compile_cfg(nested(1, 499))
    assert dfa.accepts(b"(" + b"a" * 499 + b")") and dfa.accepts(b"((a)" + b"a" * 498 + b")")
    assert not dfa.accepts(b"(" + b"a" * 500 + b")") and not dfa.accepts(b"()")


def test_one_chain_serves_every_bound_of_an_item():
    item = alt(lit("a"), RuleRef("list"))
    both = Grammar({"list": seq(lit("("), alt(repeat(item, 0, 300), seq(lit("!"), repeat(item, 2, 302))),
                                lit(")"))}, "list")
    one = sum(len(p.rhs) + 1 for p in lower_grammar(nested(0, 300)).productions)
    assert sum(len(p.rhs) + 1 for p in lower_grammar(both).productions) < one + 50
    dfa = compile_cfg(both)
    assert dfa.accepts(b"(!aa)") and dfa.accepts(b"(!" + b"a" * 302 + b")")
    assert not dfa.accepts(b"(!a)") and not dfa.accepts(b"(!" + b"a" * 303 + b")")
