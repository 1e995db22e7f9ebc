"""The C subset core (`grammar/native/subset/_subset.c`): its own contracts, beyond the row checks of
test_lazy_dfa_rows.py — interning, region lookups, byte cuts, and malformed input as ValueError."""
from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from formwork.grammar._subset import SubsetCore, edge_cuts, table_ranges
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.ir import lit, repeat, seq
from formwork.grammar.ir_chars import chars
from formwork.grammar.lexemes import lexeme

sys.path.insert(0, str(Path(__file__).parent))
from flat_moves import flat_moves  # noqa: E402

CLASSES = np.zeros(256, dtype=np.int32)  # one byte class: every byte alike


def _core(eps: list, edges: list, regions: list | None = None, start: int = 0, final: int = 1,
          classes: np.ndarray = CLASSES, num_classes: int = 1) -> tuple[SubsetCore, list]:
    sets: list = []
    return SubsetCore(flat_moves(eps, edges), regions or [], classes, num_classes, start, final, False, sets), sets


def test_interning_sorts_dedupes_and_appends_each_new_set_once():
    core, sets = _core([(1,), (), ()], [(), ((0, 255, 2),), ()])
    assert sets == [(), (0, 1)]  # DEAD, then START = closure(0)
    assert core.intern((2, 0, 2)) == 2 and sets[2] == (0, 2)
    assert core.intern([0, 2]) == 2 and len(sets) == 3
    assert core.closure(0) == (0, 1)


def test_rows_are_written_in_place_with_their_flags():
    core, sets = _core([(1,), (), ()], [(), ((0x61, 0x61, 2),), ()],
                       classes=np.array([0] * 0x61 + [1] + [2] * 158, dtype=np.int32), num_classes=3)
    rows, expanded = np.zeros((4, 3), dtype=np.int32), np.zeros(4, dtype=bool)
    core.rows([1], rows, expanded)
    assert rows[1].tolist() == [0, 2, 0] and sets[2] == (2,) and expanded.tolist() == [False, True, False, False]


@pytest.mark.parametrize("eps, edges, match", [
    ([(), ()], [((0, 255, 7),), ()], "out of range"),  # a target past the NFA
    ([(), ()], [((9, 3, 1),), ()], "out of range"),  # hi below lo
    ([(), ()], [((0, 256, 1),), ()], "out of range"),  # past the last byte
    ([(-1,), ()], [(), ()], "out of range"),
])
def test_malformed_moves_are_a_value_error(eps, edges, match):
    core, _ = _core([(), *eps], [((0, 255, 1),), *edges])  # state 0 steps into state 1
    with pytest.raises(ValueError, match=match):
        core.rows([1], np.zeros((4, 1), dtype=np.int32), np.zeros(4, dtype=bool))


def test_moves_with_offsets_out_of_order_are_a_value_error():
    words = np.frombuffer(flat_moves([(1,), (), ()], [(), ((0, 255, 2),), ()]), dtype=np.int32).copy()
    words[1 + 1] = 5  # state 0's epsilon targets would end past state 1's start
    sets: list = []
    core = SubsetCore(words.tobytes(), [], CLASSES, 1, 2, 1, False, sets)  # start 2: no moves read yet
    with pytest.raises(ValueError, match="out of order"):
        core.closure(0)


@pytest.mark.parametrize("region", [(1, 2, 0, 0, 0, 0, [[]]), (1, 9, 0, 0, 1, 0, (), ()), (1, 2, 0, 0, 5, 0, (), ())])
def test_malformed_regions_are_a_value_error(region):
    with pytest.raises(ValueError, match="region"):
        _core([(), None], [(), None], [region])


def test_wrong_arrays_are_a_value_error():
    core, _ = _core([(1,), ()], [(), ()])
    with pytest.raises(ValueError, match="disagree"):
        core.rows([1], np.zeros((4, 1), dtype=np.int32), np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match="out of range"):
        core.rows([3], np.zeros((4, 1), dtype=np.int32), np.zeros(4, dtype=bool))
    with pytest.raises(ValueError, match="inconsistent"):
        _core([(1,), ()], [(), ()], final=5)


def test_regions_are_located_and_open_lexemes_found():
    word = lexeme(repeat(chars([("a", "c")]), 0, None), open_ended=True)
    dfa = AutomatonBuilder().dfa(seq(lit("{"), word, lit("}")))
    builder = dfa._b
    inside = dfa.walk(1, b"{ab")
    assert builder.core.locate(inside) == 0 and builder.core.in_open(inside)
    assert builder.core.locate(1) == -1 and not builder.core.in_open(1)  # before "{"
    closed = dfa.walk(1, b"{ab}")
    assert not builder.core.in_open(closed)


@settings(deadline=None, max_examples=50)
@given(st.lists(st.one_of(st.none(), st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 9))
                                              .map(lambda e: (min(e[:2]), max(e[:2]), e[2])), max_size=4)),
                max_size=12))
def test_edge_cuts_are_the_edges_bounds(states):
    want = {b for edges in states for lo, hi, _ in edges or () for b in (lo, hi + 1)}
    for moves in (states, tuple(states)):  # NFAs hold tuples; lists do too
        flags = bytearray(257)
        edge_cuts(moves, flags)
        assert {b for b in range(257) if flags[b]} == want


@pytest.mark.parametrize("bad", [b"\x01\x00\x00\x00", flat_moves([(), ()], [(), ()])[:-4], b"xyz"])
def test_malformed_flat_moves_are_a_value_error(bad):
    with pytest.raises(ValueError, match="NFA moves"):
        SubsetCore(bad, [], CLASSES, 1, 0, 0, False, [])


@pytest.mark.parametrize("bad", [[(), ()], "xy", None])
def test_moves_not_in_bytes_are_a_type_error(bad):
    with pytest.raises(TypeError):
        SubsetCore(bad, [], CLASSES, 1, 0, 1, False, [])
    if bad is not None and not isinstance(bad, list):
        with pytest.raises(TypeError, match="list or tuple"):
            edge_cuts(bad, bytearray(257))


def test_a_walk_with_another_automatons_rows_is_refused():
    """The native walk builds rows through the core only into arrays of the core's own shape."""
    from formwork.grammar import Vocabulary
    from formwork.grammar._trie_walk import walk

    vocab = Vocabulary([b"ab", b"b"])
    lazy = AutomatonBuilder().dfa(seq(lit("a"), chars([("a", "z")])))
    other = AutomatonBuilder().dfa(lit("a"))  # 3 byte classes; `lazy` has 4
    rows, classes, expanded, accepting, _ = other.walk_tables()
    root = np.array([vocab.trie.num_nodes], dtype=np.int64)
    with pytest.raises(ValueError, match="another automaton"):
        walk(rows, classes, expanded, accepting, vocab.trie.walk_layout, root, np.array([1], dtype=np.int64),
             np.zeros(1, dtype=np.int32), False, lazy._b.core)


def test_states_built_inside_a_walk_count_against_the_budget():
    """Rows built by the native walk intern states too: past max_dfa_states the walk's caller
    raises GrammarBudgetError."""
    from formwork.grammar import Vocabulary
    from formwork.grammar.budget import CompileBudget
    from formwork.grammar.errors import GrammarBudgetError
    from formwork.grammar.native_walk import walk_state

    vocab = Vocabulary([b"a" * 40])
    dfa = AutomatonBuilder(CompileBudget(max_dfa_states=20)).dfa(lit("a" * 40))
    with pytest.raises(GrammarBudgetError, match="max_dfa_states"):
        walk_state(vocab.trie, dfa, 1, np.zeros(1, dtype=np.int32))


def reference_ranges(table: np.ndarray) -> list[list[tuple[int, int, int]]]:
    """Per row, its runs of equal targets (lo, hi, target), target 0 (dead) left out."""
    out = []
    for row in table.tolist():
        runs, lo = [], 0
        for b in range(1, 257):
            if b == 256 or row[b] != row[lo]:
                if row[lo]:
                    runs.append((lo, b - 1, row[lo]))
                lo = b
        out.append(runs)
    return out


@given(st.integers(1, 5).flatmap(lambda n: st.lists(st.integers(0, n - 1), min_size=n * 256, max_size=n * 256)
                                 .map(lambda xs: np.array(xs, dtype=np.int32).reshape(n, 256))))
@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
def test_table_ranges_are_the_runs_of_each_row(table):
    table[:, 100:180] = table[:, 100:101]  # long runs too
    got = table_ranges(table, len(table))
    assert got == tuple(map(tuple, reference_ranges(table)))
    # kept per DFA for the process's life: nothing in it for a full collection to scan
    assert not gc.is_tracked(got) and not [x for runs in got for x in (runs, *runs) if gc.is_tracked(x)]


@pytest.mark.parametrize("table, n", [(np.zeros((2, 256), dtype=np.int32), 3), (np.full((1, 256), 1, dtype=np.int32), 1),
                                      (np.full((1, 256), -1, dtype=np.int32), 1), (np.zeros(10, dtype=np.int32), -1)])
def test_bad_tables_are_a_value_error(table, n):
    with pytest.raises(ValueError, match="table_ranges"):
        table_ranges(table, n)
