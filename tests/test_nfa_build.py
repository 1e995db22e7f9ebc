"""The C NFA builder (`_nfa_build.c`) checked against the Python builder it replaced.

The reference below is that builder, kept here: `nfa.NFA` must give the very same NFA (moves,
state numbering, regions, counted repetitions, emptiness) for every node the automaton builder
builds, on the benchmark schemas and on generated IR trees, in documents (lexemes and DFAs
spliced in as regions) and standalone (everything built whole).
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

import formwork.grammar.automaton as automaton
from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg.automaton import compile_cfg
from formwork.grammar.dfa import DFA, DEAD, START, product_pairs
from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import (Alt, And, ByteSet, Bytes, Empty, Grammar, Node, Not, Nothing, Repeat,
                                 RuleRef, Seq, children)
from formwork.grammar.ir_chars import chars
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.lexemes import _LEXEMES, _LEXEMES_LOCK, Region, is_lexeme, is_open_ended, lexeme
from formwork.grammar.nfa import NFA, byte_ranges
from formwork.grammar.shared_nodes import is_shared, share

SCHEMAS = Path(__file__).resolve().parents[1] / "benchmarks" / "schemas"


_VIRTUAL = 1 << 29  # region states while building: renumbered after the own states at the end


class Reference:
    """The Python NFA builder (states 0 and 1 are the start and end; see `nfa.NFA`).  `item`: the
    item NFA a standalone repetition counts over (the one `NFA` made, for identity)."""

    def __init__(self, node: Node, budget: CompileBudget, dfa_of: Callable[[Node], DFA],
                 template_of: Callable[[Node], NFA] | None = None, item: NFA | None = None,
                 copies: bool = True):
        self.eps: list = [[], []]
        self.edges: list = [[], []]
        self.budget, self.dfa_of, self.template_of = budget, dfa_of, template_of
        self.record_regions = template_of is not None
        self.copies = copies  # False: every repetition is built, none copied
        self.regions: list[Region] = []
        self.virtual = 0  # region states so far
        self._empty: dict[int, bool] = {}  # by node id (the node is alive while this builds)
        self._joins: dict[tuple[Node, int], int] = {}  # (shared node, end state) -> its entry state
        self.empty = self.is_empty(node)
        if not self.empty:  # an empty language builds nothing: the start never reaches the end
            if item is not None:
                self._counted(node, item, 0, 1, False)
            else:
                self.build(node, 0, 1)
        self._finish()

    def _finish(self) -> None:
        """Number the region states after the NFA's own and freeze the moves."""
        n = len(self.eps)

        def at(t: int) -> int:
            return n + t - _VIRTUAL if t >= _VIRTUAL else t

        self.eps = [tuple(at(t) for t in x) for x in self.eps]
        self.edges = [tuple((lo, hi, at(t)) for lo, hi, t in x) for x in self.edges]
        self.regions = [replace(r, first=at(r.first), last=at(r.last)) for r in self.regions]
        self.total = n + self.virtual

    def reserve(self, n: int) -> int:
        first = _VIRTUAL + self.virtual
        self.virtual += n
        self.budget.check_nfa(len(self.eps))
        self.budget.check_time("NFA construction")
        return first

    def is_empty(self, node: Node) -> bool:
        """Computed here, not read from the nodes' `_empty` cache (which the C builder fills)."""
        got = self._empty.get(id(node))
        if got is not None:
            return got
        kind = type(node)
        if kind is Seq:
            got = any(self.is_empty(item) for item in node.items)
        elif kind is Alt:
            got = all(self.is_empty(item) for item in node.items)
        elif kind is Nothing:
            got = True
        elif kind is ByteSet:
            got = not node.ranges
        elif kind is Repeat:
            got = node.min > 0 and self.is_empty(node.item)
        elif kind is And or kind is Not:
            got = self.dfa_of(node).is_empty()
        else:
            got = False
        self._empty[id(node)] = got
        return got

    def new_state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        n = len(self.eps)
        if n % 4096 == 0:
            self.budget.check_nfa(n)
            self.budget.check_time("NFA construction")
        return n - 1

    def build(self, node: Node, s: int, e: int) -> None:
        if self.is_empty(node):
            return
        kind = type(node)
        if kind is Repeat and self.record_regions and is_lexeme(node):
            self._splice(node, s, e)
        elif kind is Repeat and is_shared(node):
            self._shared(node, s, e)
        elif kind is Empty:
            self.eps[s].append(e)
        elif kind is Bytes:
            for (cur, nxt), b in zip(self._links(s, e, len(node.value)), node.value):
                self.edges[cur].append((b, b, nxt))
        elif kind is ByteSet:
            self.edges[s].extend([(lo, hi, e) for lo, hi in node.ranges])
        elif kind is Seq:
            self._seq(node.items, s, e)
        elif kind is Alt:
            for item in node.items:
                self.build(item, s, e)
        elif kind is Repeat:
            self._repeat(node, s, e)
        elif kind is And or kind is Not:
            self.embed(self.dfa_of(node), s, e)
        elif kind is RuleRef:
            raise GrammarError(f"unresolved rule reference {node.name!r} (compile a Grammar, not a bare node)")
        else:
            raise GrammarError(f"unknown IR node {kind.__name__}")

    def _seq(self, items: tuple[Node, ...], s: int, e: int) -> None:
        """One item after another through fresh states, but `x item{0,}`: x ends at the loop state."""
        if not items:
            self.eps[s].append(e)
        cur, i, n = s, 0, len(items)
        while i < n:
            star = self._star_item(items[i + 1]) if i + 1 < n else None
            step = 1 if star is None else 2
            nxt = e if i + step == n else self.new_state()
            if star is None:
                self.build(items[i], cur, nxt)
            else:
                loop = self.new_state()
                self.build(items[i], cur, loop)
                self.build(star, loop, loop)
                self.eps[loop].append(nxt)
            cur, i = nxt, i + step

    def _star_item(self, node: Node) -> Node | None:
        """The item of a plain star item{0,} of a non-empty item (not a lexeme or shared mark)."""
        if type(node) is not Repeat or (self.record_regions and is_lexeme(node)) or is_shared(node):
            return None
        if node.min != 0 or node.max is not None or self.is_empty(node.item):
            return None
        return node.item

    def _shared(self, node: Repeat, s: int, e: int) -> None:
        """A shared node: built once per end state, from an entry state each use moves into."""
        entry = self._joins.get((node, e))
        if entry is not None:
            self.eps[s].append(entry)
            return
        entry = self._joins[node, e] = self.new_state()
        self.eps[s].append(entry)
        self.build(node.item, entry, e)

    def _splice(self, node: Repeat, s: int, e: int) -> None:
        template = self.template_of(node)
        if template.counted is not None:
            self._counted(node, template.counted, s, e, is_open_ended(node))
            return
        fresh = not self.eps[s] and not self.edges[s]
        n = len(template.eps) - 2
        first = self.reserve(n)
        at = (s, e, *range(first, first + n))
        self.eps[s].extend(at[x] for x in template.eps[0])
        self.edges[s].extend((lo, hi, at[x]) for lo, hi, x in template.edges[0])
        if n:
            self.regions.append(Region(
                first, first + n, e, node=node, start=s, start_moves=self.move_counts(s) if fresh else None,
                template=template, open_ended=is_open_ended(node)))

    def _counted(self, node: Repeat, item: NFA, s: int, e: int, open_ended: bool) -> None:
        """`node` counting over `item`'s NFA (see `lexemes.Region`): s gets the item's start moves
        into the first repetition, and the way out if the minimum is 0."""
        fresh = not self.eps[s] and not self.edges[s]
        width = len(item.eps) - 1
        first = self.reserve(node.max * width + 1)
        if node.min == 0:
            self.eps[s].append(e)

        def at(x: int) -> int:
            return first + width if x == 1 else first + x - 1

        self.eps[s].extend(at(x) for x in item.eps[0])
        self.edges[s].extend((lo, hi, at(x)) for lo, hi, x in item.edges[0])
        self.regions.append(Region(
            first, first + node.max * width + 1, e, node=node, start=s,
            start_moves=self.move_counts(s) if fresh else None, template=item, open_ended=open_ended, counted=True))

    def _links(self, s: int, e: int, n: int) -> Iterator[tuple[int, int]]:
        if not n:
            self.eps[s].append(e)
        cur = s
        for k in range(n):
            nxt = e if k == n - 1 else self.new_state()
            yield cur, nxt
            cur = nxt

    def _repeat(self, node: Repeat, s: int, e: int) -> None:
        if self.is_empty(node.item):
            self.eps[s].append(e)
            return
        cur, proto = s, None
        for _ in range(node.min):
            nxt = self.new_state()
            proto = self._item(node.item, cur, nxt, proto)
            cur = nxt
        if node.max is None:
            loop = self.new_state()
            self.eps[cur].append(loop)
            self.build(node.item, loop, loop)
            self.eps[loop].append(e)
            return
        self.eps[cur].append(e)
        for k in range(node.max - node.min):
            nxt = e if k == node.max - node.min - 1 else self.new_state()
            proto = self._item(node.item, cur, nxt, proto)
            if nxt != e:
                self.eps[nxt].append(e)
            cur = nxt

    def _item(self, item: Node, cur: int, nxt: int, proto: tuple | None) -> tuple | None:
        if proto is not None:
            self._copy(proto, cur, nxt)
            return proto
        first, regions = len(self.eps), len(self.regions)
        eps_at, edges_at = len(self.eps[cur]), len(self.edges[cur])
        self.build(item, cur, nxt)
        if len(self.regions) != regions or not self.copies:
            return None
        return first, len(self.eps), nxt, self.eps[cur][eps_at:], self.edges[cur][edges_at:]

    def _copy(self, proto: tuple, cur: int, nxt: int) -> None:
        first, last, old_nxt, cur_eps, cur_edges = proto
        shift = len(self.eps) - first

        def at(t: int) -> int:
            return t + shift if first <= t < last else (nxt if t == old_nxt else t)

        eps, edges = self.eps, self.edges
        eps.extend([[at(t) for t in eps[q]] for q in range(first, last)])
        edges.extend([[(lo, hi, at(t)) for lo, hi, t in edges[q]] for q in range(first, last)])
        eps[cur].extend([at(t) for t in cur_eps])
        edges[cur].extend([(lo, hi, at(t)) for lo, hi, t in cur_edges])
        self.budget.check_nfa(len(eps))

    def embed(self, dfa: DFA, s: int, e: int) -> None:
        n = dfa.num_states
        if self.record_regions:
            base = self.reserve(n - 1) - 1
            self.eps[s].append(base + START)
            if n > 1:
                moves = self.move_counts(s) if self.move_counts(s) == (1, 0) else None
                self.regions.append(Region(base + 1, base + n, e, dfa=dfa, start=s, start_moves=moves))
            return
        base = len(self.eps) - 1
        for _ in range(1, n):
            self.new_state()
        self.eps[s].append(base + START)
        for q, ranges in enumerate(byte_ranges(dfa)):
            if q == DEAD:
                continue
            self.edges[base + q] = [(lo, hi, base + t) for lo, hi, t in ranges]
            if dfa.accepting[q]:
                self.eps[base + q].append(e)

    def move_counts(self, q: int) -> tuple[int, int]:
        return len(self.eps[q]), len(self.edges[q])


def checked_builds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[NFA, bool]]:
    """Make the automaton builder check every NFA it builds against the reference; the NFAs built,
    each with whether it was built standalone (a lexeme's own)."""
    built: list[tuple[NFA, bool]] = []

    def checked(node: Node, budget: CompileBudget, dfa_of, template_of=None, positions: bool = False,
                known=None) -> NFA:
        got = NFA(node, budget, dfa_of, template_of, positions, known)
        counts = positions and isinstance(node, Repeat) and node.max is not None and node.max >= 2
        if got.counted is not None:  # the item it counts over, itself built whole
            item = Reference(node.item, budget, dfa_of)
            assert counts and got.counted.eps == tuple(item.eps) and got.counted.edges == tuple(item.edges)
        want = Reference(node, budget, dfa_of, template_of, got.counted)
        assert (got.counted is not None) == (counts and not want.empty and not want.is_empty(node.item))
        assert got.num_states == len(want.eps) and got.eps == tuple(want.eps) and got.edges == tuple(want.edges)
        assert got.total_states == want.total and got.regions == want.regions and got.empty == want.empty
        assert all(got.move_counts(q) == want.move_counts(q) for q in range(len(want.eps)))
        built.append((got, template_of is None))
        return got

    monkeypatch.setattr(automaton, "NFA", checked)
    return built


def test_every_benchmark_schema_builds_the_reference_nfa(monkeypatch: pytest.MonkeyPatch) -> None:
    built = checked_builds(monkeypatch)
    builder = AutomatonBuilder()
    paths = sorted(SCHEMAS.glob("*.json"))
    assert len(paths) == 139
    for path in paths:
        node = lower_json_schema(json.loads(path.read_text())["schema"]).node
        if isinstance(node, Grammar):  # recursive: the terminals' automata
            compile_cfg(node, CompileBudget(), builder)
        else:
            builder.dfa(node, keep=False)
    documents = [nfa for nfa, standalone in built if not standalone]
    lexemes = [nfa for nfa, standalone in built if standalone]
    assert len(documents) > 139 and sum(len(nfa.regions) for nfa in documents) > 500
    assert any(nfa.counted is not None for nfa in lexemes)  # bounded repetitions counting over an item


def walk(node: Node) -> Iterator[Node]:
    """`node` and every node under it."""
    yield node
    for child in children(node):
        yield from walk(child)


@contextmanager
def marked(nodes: list[Node], flags: list[tuple[bool, bool]]) -> Iterator[None]:
    """Mark `nodes` as lexemes where the first flag says so (the second: open-ended), for a while."""
    added = []
    for node, (mark, open_ended) in zip(nodes, flags):
        if mark:
            added.append(lexeme(node, open_ended))
    try:
        yield
    finally:
        with _LEXEMES_LOCK:
            for node in added:
                _LEXEMES.pop(node, None)


_ATOMS = st.one_of(
    st.binary(max_size=3).map(Bytes),  # b"" too: the empty string
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), max_size=3)  # no range: no string
    .map(lambda pairs: ByteSet(tuple((min(p), max(p)) for p in pairs))),
    st.sampled_from([Empty(), Nothing(), chars([("é", "日")])]),
)


def _nodes(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    """Raw nodes (not normalised by the helper constructors): empty, nested and one-item Seq/Alt,
    repetitions of every kind, intersections and complements."""
    bounds = st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3)))
    return st.one_of(
        st.lists(children, max_size=3).map(lambda xs: Seq(tuple(xs))),
        st.lists(children, max_size=3).map(lambda xs: Alt(tuple(xs))),
        st.tuples(children, bounds).map(lambda x: Repeat(x[0], x[1][0], x[1][1] if x[1][1] is None else max(x[1]))),
        st.tuples(children, children).map(lambda x: And(x[0], x[1])),
        children.map(Not),
    )


TREES = st.recursive(_ATOMS, _nodes, max_leaves=8)
FLAGS = st.lists(st.tuples(st.booleans(), st.booleans()), max_size=6)


@settings(deadline=None, max_examples=200)
@given(TREES, FLAGS)
def test_generated_trees_build_the_reference_nfa(node: Node, flags: list[tuple[bool, bool]]) -> None:
    """Documents and lexemes (some repetitions marked) of generated trees, with their sub-automata."""
    repeats = [x for x in walk(node) if type(x) is Repeat and not is_lexeme(x)]
    with pytest.MonkeyPatch.context() as monkeypatch, marked(repeats, flags):
        built = checked_builds(monkeypatch)
        builder = AutomatonBuilder()
        builder.dfa(node)
        for x in repeats:
            builder.lexeme_automaton(x)
    assert built


@settings(deadline=None, max_examples=100)
@given(TREES, st.integers(0, 3), st.integers(0, 3), st.booleans(), FLAGS)
def test_copied_repetitions_are_the_built_ones(node: Node, low: int, extra: int, document: bool,
                                               flags: list[tuple[bool, bool]]) -> None:
    """Later repetitions of a bounded repetition copy the first one's states (unless it spliced
    in regions): the NFA must be the one that building every repetition gives."""
    rep = Seq((Bytes(b"<"), Repeat(node, low, low + extra), Bytes(b">")))
    builder = AutomatonBuilder()
    template_of = builder.lexeme_template if document else None
    with marked([x for x in walk(node) if type(x) is Repeat and not is_lexeme(x)], flags):
        got = NFA(rep, CompileBudget(), builder.eager, template_of)
        want = Reference(rep, CompileBudget(), builder.eager, template_of, copies=False)
    assert (got.eps, got.edges, got.regions) == (tuple(want.eps), tuple(want.edges), want.regions)


def test_a_two_state_dfa_is_a_region() -> None:
    """An embedded DFA with a start state only (besides the dead one) still makes a region."""
    ascii_text = Repeat(ByteSet(((0, 127),)), 0, None)
    node = Seq((Bytes(b"["), And(ascii_text, ascii_text), Bytes(b"]")))
    builder = AutomatonBuilder()
    assert builder.eager(ascii_text).num_states == 2
    got = NFA(node, CompileBudget(), builder.eager, builder.lexeme_template)
    want = Reference(node, CompileBudget(), builder.eager, builder.lexeme_template)
    assert len(got.regions) == 1
    assert (got.eps, got.edges, got.regions) == (tuple(want.eps), tuple(want.edges), want.regions)


@settings(deadline=None, max_examples=50)
@given(TREES, TREES, st.lists(st.binary(min_size=1, max_size=2), min_size=2, max_size=4), st.booleans())
def test_shared_suffixes_are_built_once(tail: Node, inner: Node, heads: list[bytes], document: bool) -> None:
    """Alternatives ending with one shared node: the NFA is the reference's (the node built once,
    each use an epsilon move into it) and has the language of the unshared tree."""
    joined = share(Seq((inner, tail)))
    node = Seq((Bytes(b"<"), Alt(tuple(Seq((Bytes(h), joined)) for h in heads)), Bytes(b">")))
    plain = Seq((Bytes(b"<"), Alt(tuple(Seq((Bytes(h), Seq((inner, tail)))) for h in heads)), Bytes(b">")))
    builder = AutomatonBuilder()
    template_of = builder.lexeme_template if document else None
    got = NFA(node, CompileBudget(), builder.eager, template_of)
    want = Reference(node, CompileBudget(), builder.eager, template_of)
    assert (got.eps, got.edges, got.regions) == (tuple(want.eps), tuple(want.edges), want.regions)
    a, b = builder.eager(node), builder.eager(plain)
    _, codes, _ = product_pairs(a, b, CompileBudget())
    assert (a.accepting[codes // b.num_states] == b.accepting[codes % b.num_states]).all()
