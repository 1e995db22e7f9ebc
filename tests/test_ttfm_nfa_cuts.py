"""The NFA builder's byte cuts are exactly those of the edges it reports.

`NFA.cut_mask` (which fixes the byte classes of the subset construction) starts from the cuts the
C builder records as it adds byte edges, instead of walking every state's edges again; they must
equal `_subset.edge_cuts` over `NFA.edges`, for document NFAs (with lexeme regions) and for the
standalone NFAs of lexemes and embedded DFAs.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from formwork.grammar._subset import edge_cuts
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.ir import And, Grammar, Node, Not, alt, lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.nfa import NFA

SCHEMAS = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"


def _walked_cuts(nfa: NFA) -> bytes:
    flags = bytearray(257)
    flags[0] = flags[256] = 1
    edge_cuts(nfa.edges, flags)
    return bytes(flags)


def _nodes() -> list[Node]:
    out: list[Node] = [
        lit("abc"),
        seq(chars([("a", "f")]), repeat(chars([("0", "9")]), 2, 5), lit("\xff\x00")),
        alt(regex("[a-c]+x"), lit("")),
        And(regex("[a-z]{1,8}"), Not(lit("ab"))),
        repeat(alt(lit("\x00"), chars([(0x80, 0x7FF)])), 0, 3),
    ]
    for path in sorted(SCHEMAS.glob("*.json"))[::5]:
        node = lower_json_schema(json.loads(path.read_text())["schema"]).node
        if not isinstance(node, Grammar):
            out.append(node)
    return out


@pytest.mark.parametrize("node", _nodes(), ids=lambda n: type(n).__name__)
def test_builder_cuts_are_the_edges_cuts(node: Node) -> None:
    builder = AutomatonBuilder()
    document = NFA(node, CompileBudget().start(), builder.eager, template_of=builder.lexeme_template)
    standalone = NFA(node, CompileBudget().start(), builder.eager)
    for nfa in (document, standalone):
        assert nfa._edge_cuts == _walked_cuts(nfa)
    for template in builder._lexemes.values():
        assert template.nfa._edge_cuts == _walked_cuts(template.nfa)


def test_cuts_of_an_edge_on_the_last_byte() -> None:
    nfa = NFA(lit(b"a\xff"), CompileBudget().start(), AutomatonBuilder().eager)
    assert [i for i, flag in enumerate(nfa._edge_cuts) if flag] == [0, 0x61, 0x62, 0xFF, 256]
