"""The C NFA builder on bad input: malformed nodes, failing callbacks, budgets and deep trees
raise Python exceptions (never crash), and what it returns is invisible to the cycle collector."""
from __future__ import annotations

import array
import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.errors import GrammarBudgetError, GrammarError
from formwork.grammar.ir import And, ByteSet, Bytes, Node, Not, Repeat, RuleRef, Seq, _node, lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.regex_parser import regex
from formwork.grammar.lexemes import _LEXEMES, _LEXEMES_LOCK, lexeme
from formwork.grammar.nfa import NFA

sys.path.insert(0, str(Path(__file__).parent))
from flat_moves import flat_moves  # noqa: E402


@_node
class Odd(Node):
    """An IR node kind the builder does not know."""


def _with(node: Node, **fields) -> Node:
    """`node` with fields overwritten (what frozen nodes forbid, and the builder must survive)."""
    for name, value in fields.items():
        object.__setattr__(node, name, value)
    return node


def _build(node: Node, budget: CompileBudget | None = None, dfa_of: Callable | None = None,
           template_of: Callable | None = None) -> NFA:
    builder = AutomatonBuilder()
    return NFA(node, budget or CompileBudget().start(), dfa_of or builder.eager, template_of)


@contextmanager
def _lexeme(node: Repeat) -> Iterator[Repeat]:
    """`node` marked as a lexeme for a while."""
    lexeme(node)
    try:
        yield node
    finally:
        with _LEXEMES_LOCK:
            _LEXEMES.pop(node, None)


@pytest.mark.parametrize("make, error, match", [
    (lambda: _with(ByteSet(((1, 2),)), ranges=((300, 400),)), ValueError, "byte range"),
    (lambda: _with(ByteSet(((1, 2),)), ranges=((5, 2),)), ValueError, "byte range"),
    (lambda: _with(ByteSet(((1, 2),)), ranges=(("a", "b"),)), ValueError, "byte range"),
    (lambda: _with(ByteSet(((1, 2),)), ranges=((1, 2, 3),)), ValueError, "byte range"),
    (lambda: _with(ByteSet(((1, 2),)), ranges=7), ValueError, "ranges"),
    (lambda: Seq([lit("a"), lit("b")]), ValueError, "not a tuple"),
    (lambda: Seq((lit("a"), 7)), AttributeError, "_empty"),
    (lambda: _with(Bytes(b"ab"), value="ab"), TypeError, "not bytes"),
    (lambda: _with(Repeat(lit("a"), 1, 2), min=-1), GrammarError, "repetition bounds"),
    (lambda: _with(Repeat(lit("a"), 1, 2), max=0), GrammarError, "repetition bounds"),
    (lambda: _with(Repeat(lit("a"), 1, 2), min="1"), GrammarError, "repetition bounds"),
    (lambda: seq(lit("a"), RuleRef("value")), GrammarError, "unresolved rule reference 'value'"),
    (lambda: seq(lit("a"), Odd()), GrammarError, "unknown IR node Odd"),
])
def test_malformed_nodes_raise(make: Callable[[], Node], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        _build(make())


def test_failing_callbacks_raise_their_errors() -> None:
    node = seq(lit("<"), And(regex("[a-c]+"), regex("a.*")), lit(">"))

    def broken(_: Node) -> None:
        raise RuntimeError("no DFA here")

    with pytest.raises(RuntimeError, match="no DFA here"):
        _build(node, dfa_of=broken)
    with pytest.raises(AttributeError):
        _build(node, dfa_of=lambda _: object())
    with pytest.raises(AttributeError):  # is_empty() of something that is not a DFA
        _build(Not(lit("a")), dfa_of=lambda _: object())


class _Template:
    """A stand-in for a lexeme's template NFA (`counted`: a stand-in for a counted one's item)."""

    def __init__(self, eps=((), ()), edges=((), ()), moves=None, counted=None):
        self.moves = flat_moves(eps, edges) if moves is None else moves
        self.counted = counted


@pytest.mark.parametrize("template, match", [
    (_Template(((7,), ()), ((), ())), "template target"),
    (_Template(((), ()), (((1, 2, 5),), ())), "edge target"),
    (_Template(((), ()), (((3, 2, 1),), ())), "edge target"),  # lo > hi
    (_Template(((),), ((),)), "bad template"),
    (_Template(moves=[(), ()]), "not a flat moves object"),
    (_Template(moves=flat_moves(((), ()), ((), ()))[:-4]), "inconsistent sizes"),
    (_Template(moves=array.array("i", [2, 1, 0, 1, 0, 0, 0, 7]).tobytes()), "out of order"),
    (_Template(counted=_Template(((0,), ()), ((), ()))), "counted item target"),  # into the item's start
    (_Template(counted=_Template(((), ()), (((1, 2, 2),), ()))), "counted item target"),  # past its states
    (_Template(counted=_Template(((),), ((),))), "bad counted repetition"),  # an item of one state
    (_Template(counted=_Template(moves=b"\x01")), "not a flat moves object"),
    (None, "counted"),
])
def test_malformed_templates_raise(template: _Template | None, match: str) -> None:
    with _lexeme(Repeat(Bytes(b"\x01\x02"), 0, 7)) as node:
        with pytest.raises((ValueError, AttributeError), match=match):
            _build(seq(lit("["), node, lit("]")), template_of=lambda _: template)


@pytest.mark.parametrize("node", [
    lit("x" * 5000),  # checked every 4096 new states
    repeat(lit("ab"), 0, 2000),  # copied repetitions
    repeat(lit("ab"), 2 ** 80, None),  # bounds past 64 bits
])
def test_the_state_budget_is_kept(node: Node) -> None:
    builder = AutomatonBuilder()
    with pytest.raises(GrammarBudgetError, match="max_nfa_states"):
        _build(node, CompileBudget(max_nfa_states=30).start(), builder.eager, builder.lexeme_template)


def test_a_regions_states_count_when_reached() -> None:
    """A DFA's region costs the NFA no state until the subset construction reaches its states;
    those it reaches count against max_nfa_states."""
    node = seq(lit("<"), And(regex("[a-z]{40}"), regex("[a-m]+")), lit(">"))
    builder = AutomatonBuilder()
    dfa = builder.dfa(node)
    builder.budget.max_nfa_states = 30  # the DFA's operands are built: the document's states now
    assert dfa.nfa.num_states < 10 and dfa.nfa.total_states > 40
    assert dfa.walk(1, b"<" + b"a" * 5)
    with pytest.raises(GrammarBudgetError, match="max_nfa_states"):
        dfa.walk(1, b"<" + b"a" * 40)


def test_a_counted_repetition_costs_states_per_place_not_per_repetition() -> None:
    """A bounded lexeme counts over its item: a bound of a million costs the NFA the item's
    states (numbers for the rest), and walking it reaches one place per repetition, which the
    state budgets count once."""
    with _lexeme(Repeat(chars([("a", "z")]), 0, 10 ** 6)) as node:
        builder = AutomatonBuilder(CompileBudget(max_nfa_states=30, max_dfa_states=30))
        dfa = builder.dfa(seq(lit('"'), node, lit('"')))
        assert dfa.nfa.num_states < 10 and dfa.nfa.total_states > 10 ** 6
        assert dfa.accepts(b'"' + b"q" * 3000 + b'"') and not dfa.accepts(b'"' + b"q" * 3000)
        reached, counted = dfa._b.core.materialised()
        assert counted >= 3000 and reached - counted < 30 and len(dfa._b.sets) - dfa._b.core.repeated() < 30


def test_a_repetition_bound_past_the_state_numbers_is_refused() -> None:
    with _lexeme(Repeat(chars([("a", "z")]), 0, 2 ** 40)) as node:
        builder = AutomatonBuilder()
        with pytest.raises(GrammarError, match="too large"):
            builder.dfa(seq(lit('"'), node, lit('"')))


def test_the_time_budget_is_kept() -> None:
    with pytest.raises(GrammarBudgetError, match="time budget .* during NFA construction"):
        _build(lit("x" * 5000), budget=CompileBudget(max_seconds=0).start())


def _deep(depth: int) -> Node:
    node: Node = lit("a")
    for _ in range(depth):
        node = Seq((lit("("), node))
    return node


def test_deep_trees_build_up_to_the_builders_own_depth_limit() -> None:
    """The builder's depth is bounded by its own limit (5,000 levels of C stack), not by Python's
    recursion limit: Biome's configuration schema nests ~1,850 deep, past the default 1,000."""
    assert sys.getrecursionlimit() <= 1000 + 100  # pytest's default, well under the depths below
    assert len(_build(_deep(3000)).eps) == 3000 + 2
    assert len(_build(_deep(4900)).eps) == 4900 + 2
    with pytest.raises(RecursionError, match="too deep"):
        _build(_deep(20_000))
    with pytest.raises(RecursionError, match="too deep"):
        _build(_deep(50_000))
    assert len(_build(_deep(10)).eps) == 10 + 2  # the depth count came back down after the refusals


def test_moves_areflat_moves() -> None:
    """A process holding many automata must not re-scan their moves at every collection: an NFA
    keeps them in one bytes object, and a region's tuple holds nothing for the collector."""
    with _lexeme(Repeat(chars([("a", "z")]), 0, 9)) as node:
        builder = AutomatonBuilder()
        nfa = _build(seq(lit("<"), node, regex("[0-9]+(x|yz)?"), lit(">")), dfa_of=builder.eager,
                     template_of=builder.lexeme_template)
    assert type(nfa.moves) is bytes and len(nfa.moves) % 4 == 0
    (region,) = nfa.region_tuples  # its start moves: a pair of ints
    assert len(region) == 9 and region[4] == nfa.move_counts(region[3]) and not gc.is_tracked(region[4])
    counted = nfa.regions[0]  # nine repetitions of a one-edge item: a place after each
    assert counted.counted and counted.width == 1 and counted.last - counted.first == 9 + 1
