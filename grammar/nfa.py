"""Thompson-style NFA built from the IR.

`And` / `Not` sub-terms are compiled to DFAs first (product / complement) and embedded
back into the NFA as ordinary states.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from formwork.grammar._subset import edge_cuts, freeze_lists
from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DFA, DEAD, START
from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import (
    Alt, And, ByteSet, Bytes, Empty, Node, Not, Nothing, Repeat, RuleRef, Seq,
)
from formwork.grammar.lexemes import Region, is_lexeme, is_open_ended


class NFA:
    """States with epsilon moves and byte-range edges `(lo, hi, target)`.

    Sub-terms with an empty language add nothing, so every state lies on a path to the end
    state: a non-empty set of states always has a non-empty language.  `regions` records where
    lexemes (embedded DFAs, nodes marked with `lexeme()`) were spliced in, outermost only, in
    order; their states stay None here: the subset core (`_subset.c`) reads their moves from
    the region's DFA or the lexeme's template NFA when a state is first reached.
    """

    def __init__(self, budget: CompileBudget, dfa_of: Callable[[Node], DFA], record_regions: bool = True,
                 template_of: Callable[[Node], "NFA"] | None = None):
        self.eps: list = []  # per state: epsilon targets (lists while building, then tuples)
        self.edges: list = []  # per state: (lo, hi, target) byte ranges
        self.budget = budget
        self.dfa_of = dfa_of
        self.template_of = template_of
        self.positions: list[tuple[int, int]] = []  # of the repetition `build_repeat` built
        self.regions: list[Region] = []
        self.record_regions = record_regions  # False: a lexeme's own NFA, built whole
        self.frozen = False
        self._cuts: set[int] | None = None

    def freeze(self) -> None:
        """End construction: moves become tuples, which the cyclic garbage collector stops
        tracking (a process holding many automata otherwise pays for re-scanning its lists)."""
        freeze_lists(self.eps)
        freeze_lists(self.edges)
        self.frozen = True

    def reserve(self, n: int) -> int:
        """Room for `n` states of a region (left None, see the class docstring); returns the first."""
        first = len(self.eps)
        self.eps.extend([None] * n)
        self.edges.extend([None] * n)
        self.budget.check_nfa(len(self.eps))
        self.budget.check_time("NFA construction")
        return first

    def cuts(self) -> set[int]:
        """Every byte where some edge starts or ends (edges of unfilled regions included); kept
        once frozen (templates are asked once per document that splices them)."""
        if self._cuts is not None:
            return self._cuts
        flags = bytearray(257)
        edge_cuts(self.edges, flags)
        out = {0, 256, *np.flatnonzero(np.frombuffer(flags, dtype=np.uint8)).tolist()}
        for region in self.regions:
            out |= _cuts(region.dfa) if region.dfa is not None else region.template.cuts()
        if self.frozen:
            self._cuts = out
        return out

    def is_empty(self, node: Node) -> bool:
        """True when `node` matches no string at all (cached on the node, whose objects lowering
        shares between compilations)."""
        got = node._empty
        if got is not None:
            return got
        kind = type(node)
        if kind is Seq or kind is Alt:  # Seq: some item empty; Alt: every item empty
            got = kind is Alt
            for item in node.items:
                empty = item._empty
                if empty is None:
                    empty = self.is_empty(item)
                if empty != got:
                    got = not got
                    break
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
        object.__setattr__(node, "_empty", got)
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
        """Add paths from `s` to `e` spelling exactly the language of `node`.

        Invariant: never adds edges into `s` or out of `e` (loops use fresh states).
        """
        empty = node._empty
        if empty or (empty is None and self.is_empty(node)):
            return
        kind = type(node)
        if kind is Repeat and self.record_regions and self.template_of is not None and is_lexeme(node):
            self._splice(node, s, e)
            return
        builder = _BUILDERS.get(kind)
        if builder is None:
            if kind is RuleRef:
                raise GrammarError(f"unresolved rule reference {node.name!r} (compile a Grammar, not a bare node)")
            raise GrammarError(f"unknown IR node {kind.__name__}")
        builder(self, node, s, e)

    def _splice(self, node: Repeat, s: int, e: int) -> None:
        """A lexeme as a region whose states are copied from its template when first reached."""
        template = self.template_of(node)
        fresh = not self.eps[s] and not self.edges[s]
        n = len(template.eps) - 2  # template: 0 is `s`, 1 is `e`, then the lexeme's own states
        first = self.reserve(n)
        at = (s, e, *range(first, first + n))
        self.eps[s].extend(at[x] for x in template.eps[0])
        self.edges[s].extend((lo, hi, at[x]) for lo, hi, x in template.edges[0])
        if n:  # a repetition's first item state may be one past the template's last (an item
            # without states of its own, e.g. one byte): map it by arithmetic, not through `at`
            self.regions.append(Region(
                first, first + n, e, node=node, start=s, start_moves=self.move_counts(s) if fresh else None,
                positions=tuple((first - 2 + a, at[b]) for a, b in template.positions), template=template,
                open_ended=is_open_ended(node)))

    def _empty_string(self, node: Node, s: int, e: int) -> None:
        self.eps[s].append(e)

    def _links(self, s: int, e: int, n: int) -> Iterator[tuple[int, int]]:
        """(from, to) of each of `n` pieces spelled one after another from `s` to `e`, through
        fresh states, made as the pieces are built; `n` 0: the empty string."""
        if not n:
            self.eps[s].append(e)
        cur = s
        for k in range(n):
            nxt = e if k == n - 1 else self.new_state()
            yield cur, nxt
            cur = nxt

    def _bytes(self, node: Bytes, s: int, e: int) -> None:
        for (cur, nxt), b in zip(self._links(s, e, len(node.value)), node.value):
            self.edges[cur].append((b, b, nxt))

    def _byte_set(self, node: ByteSet, s: int, e: int) -> None:
        self.edges[s].extend([(lo, hi, e) for lo, hi in node.ranges])

    def _seq(self, node: Seq, s: int, e: int) -> None:
        for (cur, nxt), item in zip(self._links(s, e, len(node.items)), node.items):
            self.build(item, cur, nxt)

    def _alt(self, node: Alt, s: int, e: int) -> None:
        for item in node.items:
            self.build(item, s, e)

    def _embedded(self, node: And | Not, s: int, e: int) -> None:
        self.embed(self.dfa_of(node), s, e)

    def _repeat(self, node: Repeat, s: int, e: int) -> list[tuple[int, int]]:
        """Build `node`; for a bounded repetition, return per repetition (the first state of its
        item, the state after it: the boundary, which is `e` after the last one)."""
        positions: list[tuple[int, int]] = []
        if self.is_empty(node.item):  # only zero repetitions are possible
            self.eps[s].append(e)
            return positions
        cur, proto = s, None
        for _ in range(node.min):
            nxt = self.new_state()
            positions.append((len(self.eps), nxt))
            proto = self._item(node.item, cur, nxt, proto)
            cur = nxt
        if node.max is None:
            loop = self.new_state()
            self.eps[cur].append(loop)
            self.build(node.item, loop, loop)
            self.eps[loop].append(e)
            return []
        self.eps[cur].append(e)
        for k in range(node.max - node.min):
            nxt = e if k == node.max - node.min - 1 else self.new_state()
            positions.append((len(self.eps), nxt))
            proto = self._item(node.item, cur, nxt, proto)
            if nxt != e:
                self.eps[nxt].append(e)
            cur = nxt
        return positions

    def _item(self, item: Node, cur: int, nxt: int, proto: tuple | None) -> tuple | None:
        """One repetition of `item` from `cur` to `nxt`: a copy of `proto` (the states and moves
        an earlier repetition's `build` made) with its states renumbered, else built.  Returns the
        prototype for the next repetition (None when this build spliced regions, which are not
        copied)."""
        if proto is not None:
            self._copy(proto, cur, nxt)
            return proto
        first, regions = len(self.eps), len(self.regions)
        eps_at, edges_at = len(self.eps[cur]), len(self.edges[cur])
        self.build(item, cur, nxt)
        if len(self.regions) != regions:
            return None
        return first, len(self.eps), nxt, self.eps[cur][eps_at:], self.edges[cur][edges_at:]

    def _copy(self, proto: tuple, cur: int, nxt: int) -> None:
        """Append a renumbered copy of a repetition's states (see `_item`), entered from `cur` and
        leaving to `nxt` (build never adds moves into its start or out of its end)."""
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

    def build_repeat(self, node: Repeat, s: int, e: int) -> None:
        """`build` for a repetition, keeping its positions in `positions` (see `_repeat`)."""
        if not self.is_empty(node):
            self.positions = self._repeat(node, s, e)

    def embed(self, dfa: DFA, s: int, e: int) -> None:
        """Splice a DFA between `s` and `e` (dead state dropped); outside regions, as a region
        whose states are filled on first use."""
        n = dfa.num_states
        if self.record_regions:
            base = self.reserve(n - 1) - 1  # DFA state q (q >= 1) becomes NFA state base + q
            self.eps[s].append(base + START)
            if n > 1:
                moves = self.move_counts(s) if self.move_counts(s) == (1, 0) else None  # just the move into the DFA
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
        """(epsilon moves, byte edges) out of state `q`."""
        return len(self.eps[q]), len(self.edges[q])


def _cuts(dfa: DFA) -> set[int]:
    """The bytes where a DFA's edges start or end (cached)."""
    got = dfa._cache.get("cuts")
    if got is None:
        got = dfa._cache["cuts"] = {b for ranges in byte_ranges(dfa) for lo, hi, _ in ranges for b in (lo, hi + 1)}
    return got


def byte_ranges(dfa: DFA) -> list[list[tuple[int, int, int]]]:
    """Per state, its transitions as (lo, hi, target) byte ranges without the dead state (cached)."""
    got = dfa._cache.get("byte_ranges")
    if got is None:
        table = dfa.table
        change = np.ones((table.shape[0], 257), dtype=bool)
        change[:, 1:256] = table[:, 1:] != table[:, :-1]
        rows, cuts = np.nonzero(change)  # row-major: each state's run starts, then 256
        ends = np.roll(cuts, -1)
        starts = np.flatnonzero(np.diff(rows, prepend=-1))  # where each state's cuts begin
        keep = (cuts < 256) & (table[rows, np.minimum(cuts, 255)] != DEAD)
        runs = list(zip(cuts[keep].tolist(), (ends[keep] - 1).tolist(), table[rows[keep], cuts[keep]].tolist()))
        per_state = np.add.reduceat(keep, starts).tolist() if len(starts) else []
        got, at = [], 0
        for n in per_state:
            got.append(runs[at: at + n])
            at += n
        dfa._cache["byte_ranges"] = got
    return got


_BUILDERS: dict[type, Callable[[NFA, Node, int, int], None]] = {
    Empty: NFA._empty_string, Bytes: NFA._bytes, ByteSet: NFA._byte_set, Seq: NFA._seq, Alt: NFA._alt,
    Repeat: NFA._repeat, And: NFA._embedded, Not: NFA._embedded,
}  # how `NFA.build` adds each kind of IR node (a RuleRef has no automaton)


def accepting_bytes(dfa: DFA) -> bytes:
    """A DFA's accepting flags, a byte per state (cached)."""
    got = dfa._cache.get("accepting_bytes")
    if got is None:
        got = dfa._cache["accepting_bytes"] = np.asarray(dfa.accepting, dtype=np.uint8).tobytes()
    return got
