"""Whether a compiled JSON grammar accepts a JSON value in some spelling (shared by
`benchmarks/corpus.py` and `tests/test_real_world_corpus.py`).

The spellings are those `conftest_grammar_json.spellings` varies (member order, `1.0` as `1`
where the draft allows, `\\u00e9`-style escapes or raw characters) plus exponent-free numbers; the search
runs over the grammar's automaton, keeping the reachable states after each part of the value, so
a wrong member order is cut at its first key. The text found is confirmed with
`Matcher.accept_string` and `can_terminate`.
"""
from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from formwork.grammar.dfa import DEAD, START

MAX_WALKS = 50_000  # automaton steps one spelling search may take before it gives up
MAX_FRONTIER = 4096  # partial member orders one object's search may hold at once


class Undecided(Exception):
    """The spelling search grew past its bounds (`MAX_WALKS`, `MAX_FRONTIER`)."""


def scalar_texts(value: Any, integral_floats: bool) -> list[str]:
    if isinstance(value, str):
        return list(dict.fromkeys([json.dumps(value), json.dumps(value, ensure_ascii=False)]))
    out = [json.dumps(value)]
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        if integral_floats and value.is_integer():
            out.append(str(int(value)))
        if "e" in out[0]:  # the exponent-free spelling, still a fraction where 1.0 is no integer
            plain = format(Decimal(out[0]), "f")
            out.append(plain if integral_floats or "." in plain else plain + ".0")
    return list(dict.fromkeys(out))


def property_rank(*schemas: Any) -> dict[str, int]:
    """Property names in the order the schemas declare them (document order, first declaration
    wins): formwork emits declared properties in schema order."""
    rank: dict[str, int] = {}
    todo = list(reversed(schemas))
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                for name in props:
                    rank.setdefault(name, len(rank))
            todo.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            todo.extend(reversed(node))
    return rank


def _ranked(value: Any, rank: dict[str, int]) -> Any:
    """`value` with every object's members in `rank` order, undeclared ones last."""
    if isinstance(value, list):
        return [_ranked(v, rank) for v in value]
    if not isinstance(value, dict):
        return value
    order = sorted(value, key=lambda k: rank.get(k, len(rank)))
    return {k: _ranked(value[k], rank) for k in order}


class _Search:
    """Reachable automaton states after each spelling of a value, with one text per state.
    Members come in the value's own order, or with `free` the ones `rank` declares in any order
    the automaton allows (cut by `_first`) and the others in their own relative order, anywhere
    among them (formwork emits them last, in any order)."""

    def __init__(self, dfa: Any, integral_floats: bool, free: bool, rank: dict[str, int]):
        self.dfa = dfa
        self.rank = rank
        self.integral_floats = integral_floats
        self.free = free
        self.walks = 0
        self.memo: dict[tuple[int, int], dict[int, str]] = {}

    def step(self, states: dict[int, str], text: str) -> dict[int, str]:
        out: dict[int, str] = {}
        data = text.encode()
        self.walks += len(states)
        if self.walks > MAX_WALKS:
            raise Undecided
        for state, prefix in states.items():
            nxt = self.dfa.walk(state, data)
            if nxt != DEAD:
                out.setdefault(nxt, prefix + text)
        return out

    def then(self, states: dict[int, str], value: Any) -> dict[int, str]:
        out: dict[int, str] = {}
        for state, prefix in states.items():
            for end, text in self.ends(state, value).items():
                out.setdefault(end, prefix + text)
        return out

    def ends(self, start: int, value: Any) -> dict[int, str]:
        key = (id(value), start)
        if key not in self.memo:
            self.walks += 1
            self.memo[key] = self._ends(start, value)
        return self.memo[key]

    def _ends(self, start: int, value: Any) -> dict[int, str]:
        begin = {start: ""}
        if isinstance(value, list):
            states = self.step(begin, "[")
            for i, item in enumerate(value):
                states = self.then(self.step(states, ",") if i else states, item)
            return self.step(states, "]")
        if isinstance(value, dict):
            return self._object(begin, list(value.items()))
        out: dict[int, str] = {}
        for text in scalar_texts(value, self.integral_floats):
            for state, got in self.step(begin, text).items():
                out.setdefault(state, got)
        return out

    def _member(self, states: dict[int, str], keys: list[str], item: Any, first: bool) -> dict[int, str]:
        out: dict[int, str] = {}
        for key in keys:
            for state, text in self.then(self.step(states, ("" if first else ",") + key + ":"),
                                         item).items():
                out.setdefault(state, text)
        return out

    def _first(self, got: dict[int, dict[int, str]], keys: list[list[str]],
               declared: frozenset) -> list[int]:
        """The members that may come next without shutting out another declared candidate: in
        formwork's objects a declared property placed after a later one can no longer come."""
        return [i for i in got if all(
            any(self.step(got[i], "," + key + ":") for key in keys[j])
            for j in got if j != i and j in declared)]

    def _object(self, begin: dict[int, str], items: list[tuple[str, Any]]) -> dict[int, str]:
        keys = [scalar_texts(name, True) for name, _ in items]
        states = self.step(begin, "{")
        if not self.free:
            for i, (_, item) in enumerate(items):
                states = self._member(states, keys[i], item, i == 0)
            return self.step(states, "}")
        declared = frozenset(i for i, (name, _) in enumerate(items) if name in self.rank)
        others = [i for i in range(len(items)) if i not in declared]
        frontier = {(declared, 0): states}
        for placed in range(len(items)):
            nxt: dict[tuple[frozenset, int], dict[int, str]] = {}
            for (left, done), states in frontier.items():
                moves = {i: (left - {i}, done) for i in left}
                if done < len(others):
                    moves[others[done]] = (left, done + 1)
                got = {i: self._member(states, keys[i], items[i][1], placed == 0) for i in moves}
                got = {i: g for i, g in got.items() if g}
                for i in self._first(got, keys, declared) or got:
                    bucket = nxt.setdefault(moves[i], {})
                    for state, text in got[i].items():
                        bucket.setdefault(state, text)
            if len(nxt) > MAX_FRONTIER:
                raise Undecided
            frontier = nxt
        return self.step(frontier.get((frozenset(), len(others)), {}), "}")


def accepted_text(grammar: Any, value: Any, rank: dict[str, int],
                  integral_floats: bool = True) -> str | None:
    """A spelling of `value` that the grammar accepts as a whole document, or None: members in
    `rank` order, then in the value's order, then in any order (see `_Search`). Raises
    `Undecided` when that search takes more than `MAX_WALKS` steps or `MAX_FRONTIER` orders.
    The matcher must accept what the automaton accepts, unless it compares unique arrays'
    items (`grammar.unique`): then the items decide, whatever the spelling."""
    ranked = _ranked(value, rank)
    for candidate, free in ((ranked, False), (value, False), (ranked, True)):
        search = _Search(grammar.dfa, integral_floats, free, rank)
        for state, text in search.ends(START, candidate).items():
            if grammar.dfa.accepting[state]:
                m = grammar.matcher(max_step_seconds=None)
                if not (m.accept_string(text) and m.can_terminate()):
                    if grammar.unique is not None:
                        return None
                    raise AssertionError(f"the automaton accepts {text!r} but the matcher does not")
                return text
    return None
