"""Lazy subset construction checked against a plain one: every reachable state's row, per byte.

The reference steps a state's NFA set over one byte edge by edge and closes the result by a plain
search over epsilon moves; `LazyDFA` must reach the same NFA set through every byte, and keep its
byte table, class rows, flat table and accepting flags consistent with it.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.ir import And, Node, Not, Repeat, alt, lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.lexemes import Region, lexeme
from formwork.grammar.nfa import NFA, byte_ranges

_MAX_STATES = 400
_CHAR = alt(chars([("a", "z")]), lit("é"), lit("日"))  # items no one of which is a prefix of another


def _moves(nfa: NFA, q: int) -> tuple[tuple[int, ...], tuple[tuple[int, int, int], ...]]:
    """(epsilon targets, byte edges) of NFA state `q`, spelled out in Python: a region's states
    (numbered after the NFA's own) come from its embedded DFA, its template NFA, whose state 0 is
    the region's start, 1 its end and x >= 2 the document's `first - 2 + x`, or for a counted
    repetition its item's NFA (see `lexemes.Region`)."""
    if q < nfa.num_states:
        return nfa.eps[q], nfa.edges[q]
    (region,) = [r for r in nfa.regions if r.first <= q < r.last]
    if region.counted:
        return _counted_moves(region, q)
    if getattr(region.dfa, "counted_dfa", False):
        return _counted_dfa_moves(region, q)
    if region.dfa is not None:
        base, d = region.first - 1, q - region.first + 1
        return ((region.end,) if region.dfa.accepting[d] else (),
                tuple((lo, hi, base + t) for lo, hi, t in byte_ranges(region.dfa)[d]))

    def at(x: int) -> int:
        return region.first - 2 + x if x > 1 else (region.end if x else region.start)

    t = q - region.first + 2
    template = region.template
    return tuple(at(x) for x in template.eps[t]), tuple((lo, hi, at(x)) for lo, hi, x in template.edges[t])


def _counted_moves(region: Region, q: int) -> tuple[tuple[int, ...], tuple[tuple[int, int, int], ...]]:
    """A counted repetition's state q: after j repetitions (the way out from the minimum on, the
    item's start moves in the next one below the maximum), or the item's state x in repetition
    j + 1 (its end: the place after it)."""
    item, width, node = region.template, region.width, region.node
    j, o = divmod(q - region.first, width)
    assert (j, o) != (0, 0)  # the place before the first repetition is the region's start

    def at(x: int) -> int:
        assert x >= 1
        return region.first + (j + 1) * width if x == 1 else region.first + j * width + x - 1

    x = o + 1 if o else 0
    if not o and j == node.max:
        return (region.end,), ()
    out = (region.end,) if not o and j >= node.min else ()
    return out + tuple(at(t) for t in item.eps[x]), tuple((lo, hi, at(t)) for lo, hi, t in item.edges[x])


def _counted_dfa_moves(region: Region, q: int) -> tuple[tuple[int, ...], tuple[tuple[int, int, int], ...]]:
    """A `CountedDFA`'s place (j, d): the way out where its pattern may end, and its product's
    edges, one more character where one ends, kept where the place can still end in time."""
    counted = region.dfa
    n = counted.live_states
    j, d = divmod(q - region.first, n)
    d += 1
    edges = []
    for lo, hi, t in byte_ranges(counted)[d]:
        nxt = j + int(counted.tick[t])
        if nxt + int(counted.least[t]) <= counted.hi:
            edges.append((lo, hi, region.first + nxt * n + t - 1))
    return ((region.end,) if counted.accepting[d] else ()), tuple(edges)


def _closure(nfa: NFA, states: set[int]) -> frozenset[int]:
    seen, stack = set(states), list(states)
    while stack:
        for t in _moves(nfa, stack.pop())[0]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    return frozenset(seen)


def _step(nfa: NFA, states: frozenset[int], byte: int) -> frozenset[int]:
    return _closure(nfa, {t for q in states for lo, hi, t in _moves(nfa, q)[1] if lo <= byte <= hi})


def _check_against_reference(dfa: LazyDFA) -> None:
    nfa, final = dfa.nfa, dfa._b.final
    seen, todo = {START}, [START]
    while todo and len(seen) < _MAX_STATES:
        s = todo.pop()
        here = frozenset(dfa._b.sets[s])
        row = dfa.row(s)
        rows, class_of_byte, expanded, _, _ = dfa.walk_tables()
        assert expanded[s] and (rows[s][class_of_byte] == row).all()
        assert (dfa.class_row(s)[dfa.byte_classes()[0]] == row).all()
        assert dfa.live_bytes(s) == bytes(np.flatnonzero(row).tolist())
        for byte in range(256):
            nxt = int(row[byte])
            assert frozenset(dfa._b.sets[nxt]) == _step(nfa, here, byte), (s, byte)
            assert bool(dfa.accepting[nxt]) == (final in dfa._b.sets[nxt])
            if nxt != DEAD and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)


_ATOMS = st.one_of(
    st.text(alphabet="abc{}\"", min_size=1, max_size=3).map(lit),
    st.lists(st.tuples(st.sampled_from("abcxyz"), st.sampled_from("abcxyz")), min_size=1, max_size=3)
    .map(lambda pairs: chars([(min(p), max(p)) for p in pairs])),
    st.sampled_from(["é", "日", "\x7f"]).map(lit),
)


def _nodes(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    bounds = st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 2)))
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map(lambda xs: seq(*xs)),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: alt(*xs)),
        st.tuples(children, bounds).map(lambda x: repeat(x[0], x[1][0], max(x[1]) if x[1][1] is not None else None)),
        st.tuples(children, st.integers(1, 3)).map(lambda x: lexeme(repeat(x[0], 0, x[1]))),
        st.tuples(children, st.integers(1, 2), st.integers(0, 3)).map(  # counted, with a minimum
            lambda x: lexeme(Repeat(x[0], x[1], x[1] + x[2]))),
        st.tuples(children, st.integers(0, 1)).map(lambda x: lexeme(repeat(x[0], x[1], None))),
        st.tuples(children, children).map(lambda x: And(alt(*x), Not(x[1]))),  # an embedded DFA
    )


@settings(deadline=None, max_examples=60)
@given(st.recursive(_ATOMS, _nodes, max_leaves=8))
def test_lazy_rows_match_plain_subset_construction(node: Node) -> None:
    builder = AutomatonBuilder()
    dfa = builder.dfa(node)
    if isinstance(dfa, LazyDFA):
        _check_against_reference(dfa)
        for region in dfa.nfa.regions:  # the lexemes' own automata (a counted one: one region)
            if region.node is not None:
                _check_against_reference(builder.lexeme_automaton(region.node))


def test_overlapping_edges_of_one_state_are_merged() -> None:
    """One NFA state whose edges overlap (an alternative of classes sharing bytes): the row
    must hold the union of both targets' closures on the shared bytes."""
    node = alt(seq(chars([("a", "m")]), lit("1")), seq(chars([("h", "z")]), lit("2")))
    dfa = AutomatonBuilder().dfa(node)
    assert isinstance(dfa, LazyDFA)
    _check_against_reference(dfa)
    assert dfa.accepts(b"h1") and dfa.accepts(b"h2") and dfa.accepts(b"a1") and not dfa.accepts(b"a2")


def test_lexeme_regions_spliced_from_templates() -> None:
    """A document with the same lexeme twice: both regions' states come from one template."""
    word = lexeme(repeat(chars([("a", "c")]), 1, None))
    dfa = AutomatonBuilder().dfa(seq(lit("{"), word, lit(","), word, lit("}")))
    assert isinstance(dfa, LazyDFA) and len(dfa.nfa.regions) == 2
    _check_against_reference(dfa)
    assert dfa.accepts(b"{ab,c}") and not dfa.accepts(b"{ab,}") and not dfa.accepts(b"{a,d}")


def test_counted_dfa_regions_read_by_arithmetic() -> None:
    """A pattern under a bound from COUNT_FROM is a counted product: its places' moves by
    arithmetic, only to places that can still end within the bound."""
    piece = And(repeat(alt(lit("ab"), lit("é")), 1, None), Repeat(_CHAR, 1, 70))
    dfa = AutomatonBuilder().dfa(seq(lit("<"), piece, lit(">")))
    assert isinstance(dfa, LazyDFA) and [getattr(r.dfa, "counted_dfa", False) for r in dfa.nfa.regions] == [True]
    _check_against_reference(dfa)
    assert dfa.accepts(b"<" + b"ab" * 35 + b">") and not dfa.accepts(b"<" + b"ab" * 35 + b"\xc3\xa9>")
    assert dfa.accepts("<abé>".encode()) and not dfa.accepts(b"<a>") and not dfa.accepts(b"<>")


def test_embedded_dfa_regions_read_by_arithmetic() -> None:
    """And/Not pieces are embedded DFAs: their states' moves come from the DFA's byte ranges."""
    digits = repeat(chars([("0", "9")]), 1, 3)
    piece = And(digits, Not(lit("00")))
    dfa = AutomatonBuilder().dfa(seq(lit("<"), piece, lit(","), piece, lit(">")))
    assert isinstance(dfa, LazyDFA) and [r.dfa is not None for r in dfa.nfa.regions] == [True, True]
    _check_against_reference(dfa)
    assert dfa.accepts(b"<7,123>") and not dfa.accepts(b"<00,1>") and not dfa.accepts(b"<1234,1>")


@settings(deadline=None, max_examples=60)
@given(st.data())
def test_embedded_dfa_byte_ranges_are_the_runs_of_each_row(data):
    """An embedded DFA's edges (nfa.byte_ranges): per state, maximal runs of equal targets."""
    from formwork.grammar.dfa import DFA

    num_states = data.draw(st.integers(1, 6))
    cuts = data.draw(st.lists(st.lists(st.integers(1, 255), max_size=5), min_size=num_states, max_size=num_states))
    table = np.zeros((num_states, 256), dtype=np.int32)
    for q, row_cuts in enumerate(cuts):
        bounds = [0, *sorted(set(row_cuts)), 256]
        for lo, hi in zip(bounds, bounds[1:]):
            table[q, lo:hi] = data.draw(st.integers(0, num_states - 1))
    want = []
    for q in range(num_states):
        runs, lo = [], 0
        for b in range(1, 257):
            if b == 256 or table[q, b] != table[q, lo]:
                if table[q, lo] != DEAD:
                    runs.append((lo, b - 1, int(table[q, lo])))
                lo = b
        want.append(tuple(runs))
    assert byte_ranges(DFA(table, np.zeros(num_states, dtype=bool))) == tuple(want)

