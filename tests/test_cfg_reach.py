"""The native searches of `_reach` (the reachable part of a DFA, for language signatures; whether
it accepts over some byte classes, for the slice check) against Python breadth-first searches,
signatures that tell languages apart, and malformed input (an error, never a crash)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from formwork.grammar._reach import byte_runs, reach, reaches_accepting
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.cfg.terminal_tables import language_signature, reachable_part
from formwork.grammar.dfa import DEAD, START
from formwork.grammar.ir import alt, lit, repeat, seq
from formwork.grammar.ir_chars import chars

ALPHABET = b"ab1"
PIECES = [lit("ab"), lit("a"), chars([(0x61, 0x62)]), chars([(0x31, 0x31)]), lit("1b")]


@st.composite
def regexes(draw, depth: int = 2):
    if depth == 0:
        return draw(st.sampled_from(PIECES))
    kind = draw(st.sampled_from(["leaf", "seq", "alt", "star", "bounded"]))
    if kind == "leaf":
        return draw(st.sampled_from(PIECES))
    if kind in ("seq", "alt"):
        return (seq if kind == "seq" else alt)(draw(regexes(depth - 1)), draw(regexes(depth - 1)))
    low = draw(st.integers(0, 2))
    return repeat(draw(regexes(depth - 1)), low, None if kind == "star" else low + draw(st.integers(0, 2)))


def _row(dfa, q: int) -> list[int]:
    """The row of `q` as the native loops read it (over classes; an eager DFA's are the bytes)."""
    dfa.ensure_one(q)
    return dfa.walk_tables()[0][q].tolist()


def _reference_part(dfa, state: int) -> tuple[list[list[int]], list[bool]]:
    """Breadth-first over rows in class order, the dead state last."""
    order, index = [state], {state: 0}
    for q in order:
        for t in _row(dfa, q):
            if t != DEAD and t not in index:
                index[t] = len(order)
                order.append(t)
    sink = len(order)
    table = [[index.get(t, sink) if t != DEAD else sink for t in _row(dfa, q)] for q in order]
    width = len(table[0])
    return table + [[sink] * width], [bool(dfa.accepting[q]) for q in order] + [False]


@settings(deadline=None, max_examples=60)
@given(term=regexes(), prefix=st.binary(max_size=3).map(lambda b: bytes(ALPHABET[x % 3] for x in b)))
def test_reachable_part_is_the_breadth_first_one(term, prefix):
    """On a fresh lazy automaton (rows built inside the search) and on its eager twin."""
    for dfa in (AutomatonBuilder().dfa(term), AutomatonBuilder().dfa(term).materialize()):
        state = dfa.walk(START, prefix)
        if state == DEAD:
            return
        part = reachable_part(dfa, state)
        want_table, want_accepting = _reference_part(dfa, state)
        if part is None:
            assert len(want_table) - 1 > 32
            continue
        raw_table, raw_accepting = part
        table = np.frombuffer(raw_table, dtype=np.int32).reshape(len(raw_accepting), -1)
        assert table.tolist() == want_table
        assert [bool(a) for a in raw_accepting] == want_accepting


def _language(dfa, state: int, length: int = 5) -> set[bytes]:
    words = (bytes(w) for n in range(length + 1) for w in itertools.product(ALPHABET, repeat=n))
    return {w for w in words if (q := dfa.walk(state, w)) != DEAD and dfa.accepting[q]}


@settings(deadline=None, max_examples=60)
@given(one=regexes(), other=regexes())
def test_signatures_tell_languages_apart(one, other):
    """Languages that differ on a short string get different signatures; a language built twice,
    or read eagerly, gets the same one."""
    a, b = AutomatonBuilder().dfa(one), AutomatonBuilder().dfa(other)
    if _language(a, START) != _language(b, START):
        assert language_signature(a, START) != language_signature(b, START)
    assert language_signature(a, START) == language_signature(AutomatonBuilder().dfa(one).materialize(), START)


def test_large_reachable_parts_have_no_signature():
    counter = AutomatonBuilder().dfa(repeat(chars([(0x61, 0x61)]), 40, 40))
    assert reachable_part(counter, START) is None and language_signature(counter, START) is None


def test_malformed_input_raises():
    dfa = AutomatonBuilder().dfa(lit("ab")).materialize()
    rows, _, expanded, accepting, _ = dfa.walk_tables()
    with pytest.raises(ValueError):
        reach(rows, 256, expanded, accepting, None, dfa.num_states, 8)  # state out of range
    with pytest.raises(ValueError):
        reach(rows[:-1], 256, expanded, accepting, None, START, 8)  # rows cut short
    with pytest.raises(ValueError):
        reach(rows, 256, expanded, accepting, None, START, 0)  # no room
    with pytest.raises(ValueError):
        reach(rows, 0, expanded, accepting, None, START, 8)  # no classes
    bad = rows.copy()
    bad[START, 0] = 10 ** 6
    with pytest.raises(ValueError):
        reach(bad, 256, expanded, accepting, None, START, 8)  # a move past the automaton
    unbuilt = np.zeros_like(expanded)
    with pytest.raises(ValueError):
        reach(rows, 256, unbuilt, accepting, None, START, 8)  # a missing row and no core to build it


def _reference_accepts(dfa, state: int, classes: set[int]) -> bool:
    """Breadth-first over the flagged classes: an accepting state one step or more away?"""
    seen, todo = {state}, [state]
    while todo:
        row = _row(dfa, todo.pop())
        for c, t in enumerate(row):
            if c in classes and t != DEAD and t not in seen:
                if dfa.accepting[t]:
                    return True
                seen.add(t)
                todo.append(t)
    return False


@settings(deadline=None, max_examples=60)
@given(term=regexes(), prefix=st.binary(max_size=3).map(lambda b: bytes(ALPHABET[x % 3] for x in b)),
       held=st.sets(st.sampled_from(ALPHABET)))
def test_reaches_accepting_is_the_breadth_first_answer(term, prefix, held):
    """On a fresh lazy automaton (rows built inside the search) and on its eager twin."""
    for dfa in (AutomatonBuilder().dfa(term), AutomatonBuilder().dfa(term).materialize()):
        state = dfa.walk(START, prefix)
        if state == DEAD:
            return
        while True:
            rows, class_of_byte, expanded, accepting, core = dfa.walk_tables()
            flags = np.zeros(rows.shape[1], dtype=np.uint8)
            flags[[int(class_of_byte[b]) for b in held]] = 1
            got = reaches_accepting(rows, rows.shape[1], expanded, accepting, core, state, flags)
            if core is not None:
                dfa.record_new()
            if isinstance(got, bool):
                break
        rows, class_of_byte = dfa.walk_tables()[:2]
        assert got == _reference_accepts(dfa, state, {int(class_of_byte[b]) for b in held})


def test_reaches_accepting_refuses_bad_input():
    dfa = AutomatonBuilder().dfa(lit("ab")).materialize()
    rows, _, expanded, accepting, _ = dfa.walk_tables()
    every = np.ones(256, dtype=np.uint8)
    assert reaches_accepting(rows, 256, expanded, accepting, None, START, every) is True
    assert reaches_accepting(rows, 256, expanded, accepting, None, START, np.zeros(256, dtype=np.uint8)) is False
    with pytest.raises(ValueError):
        reaches_accepting(rows, 256, expanded, accepting, None, START, every[:-1])  # a flag short
    with pytest.raises(ValueError):
        reaches_accepting(rows, 256, expanded, accepting, None, dfa.num_states, every)  # state out of range
    bad = rows.copy()
    bad[START, ord("a")] = 10 ** 6
    with pytest.raises(ValueError):
        reaches_accepting(bad, 256, expanded, accepting, None, START, every)  # a move past the automaton
    with pytest.raises(ValueError):
        reaches_accepting(rows, 256, np.zeros_like(expanded), accepting, None, START, every)  # no row, no core


def test_byte_runs_rejects_malformed_input():
    table = np.zeros(2 * 3, dtype=np.int32).tobytes()
    classes = np.zeros(256, dtype=np.int32)
    assert len(byte_runs(table, b"\0\1", classes)) == 8 + 4 * 2 + 2  # one run
    with pytest.raises(ValueError, match="inconsistent"):
        byte_runs(table[:-4], b"\0\1", classes)
    with pytest.raises(ValueError, match="inconsistent"):
        byte_runs(table, b"\0\1", classes[:10])
    with pytest.raises(ValueError, match="class out of range"):
        byte_runs(table, b"\0\1", np.full(256, 3, dtype=np.int32))
