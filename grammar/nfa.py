"""Thompson-style NFA built from the IR (in C: `_nfa_build.c`).

`And` / `Not` sub-terms are compiled to DFAs first (product / complement) and embedded
back into the NFA as ordinary states.
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from functools import cached_property

import numpy as np

from formwork.grammar._nfa_build import build
from formwork.grammar._subset import edge_cuts, table_ranges
from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DFA
from formwork.grammar.ir import Node, Repeat
from formwork.grammar.lexemes import Region, lexeme_marks
from formwork.grammar.shared_nodes import shared_marks

START, FINAL = 0, 1  # every NFA's start and end states
_INT32_PAIR = struct.Struct("=ii")  # two native int32 words of the flat moves (`_nfa_flat.h`)


class NFA:
    """The NFA of an IR node from `START` to `FINAL`: states with epsilon moves and byte-range
    edges `(lo, hi, target)`, kept flat (`moves`, the int32 layout of `_nfa_flat.h`): a few
    objects per automaton rather than a tuple per state and per edge, which are slow to make
    and to free and which a process holding many automata would make its collector re-scan.

    Sub-terms with an empty language add nothing, so every state lies on a path to the end
    state: a non-empty set of states always has a non-empty language.  `regions` records where
    lexemes (embedded DFAs, nodes marked with `lexeme()`) were spliced in, outermost only, in
    order.  Their states are numbered after the NFA's own `num_states` (up to `total_states`) and
    cost nothing here: the subset core (`_subset.c`) makes their moves from the region's DFA, the
    lexeme's template NFA (`template_of`) or, for a counted repetition, its item's NFA, when it
    first reaches them.  Without `template_of` the NFA is a lexeme's own, built whole: DFAs are
    embedded as ordinary states and there are no regions, but for one: with `positions`, a
    repetition `node` bounded at two or more, of a non-empty item, counts over its item as a
    single counted region (`counted`: the item's NFA; see `lexemes.Region`).
    `dfa_of` gives the DFA of an `And` / `Not` sub-term.  `known` (from `AutomatonBuilder`, whose
    `embedded` and `lexeme_template` are then `dfa_of` and `template_of`) lets the builder take
    what those would return from their tables, without calling them: (the dicts of DFAs `eager`
    looks in, `COUNT_FROM`, the dict of lexeme templates).
    """

    def __init__(self, node: Node, budget: CompileBudget, dfa_of: Callable[[Node], DFA],
                 template_of: Callable[[Node], "NFA"] | None = None, positions: bool = False,
                 known: tuple[tuple[dict, ...], int, dict] | None = None):
        item = _counted_item(node, budget, dfa_of) if positions else None
        moves, regions, total, empty, cuts = build(node, budget, dfa_of, template_of, _whole, lexeme_marks(),
                                                      shared_marks(), item, known)
        self.moves: bytes = moves  # see `_nfa_flat.h`; `eps` and `edges` spell it out
        self.num_states: int = _INT32_PAIR.unpack_from(moves)[0]  # the NFA's own states (not regions')
        self.total_states: int = total  # and the regions' states after them
        self.counted: NFA | None = item if regions else None  # a counted repetition's item
        self.empty: bool = empty  # whether the language is empty
        self.region_tuples: list[tuple] = regions  # as the builder reports them (see `_region`)
        self._edge_cuts: bytes = cuts  # the bytes where this NFA's own edges start or end (see `cut_mask`)
        self._cut_mask: int | None = None
        self._regions: dict[int, Region] = {}  # see `region`

    @cached_property
    def _words(self) -> list[int]:
        return memoryview(self.moves).cast("i").tolist()

    @cached_property
    def eps(self) -> tuple[tuple[int, ...], ...]:
        """Per own state its epsilon targets, spelled out for inspection."""
        w, n = self._words, self.num_states
        targets = w[3 + 2 * n:]
        return tuple(tuple(targets[w[1 + q]: w[2 + q]]) for q in range(n))

    @cached_property
    def edges(self) -> tuple[tuple[tuple[int, int, int], ...], ...]:
        """Per own state its (lo, hi, target) edges, spelled out for inspection."""
        w, n = self._words, self.num_states
        flat = w[3 + 2 * n + w[1 + n]:]
        triples = list(zip(flat[0::3], flat[1::3], flat[2::3]))
        return tuple(tuple(triples[w[2 + n + q]: w[3 + n + q]]) for q in range(n))

    @cached_property
    def regions(self) -> list[Region]:
        """The regions as `Region` objects (made on first use: most compiles never ask)."""
        return [self.region(k) for k in range(len(self.region_tuples))]

    def region(self, k: int) -> Region:
        """Region `k` as a `Region` object, made on first use: a document state inside a lexeme
        needs only its own (a grammar may hold thousands, e.g. an object under maxItems 64)."""
        got = self._regions.get(k)
        if got is None:
            got = self._regions[k] = _region(*self.region_tuples[k])
        return got

    def cut_mask(self) -> int:
        """Every byte where some edge starts or ends (edges of unfilled regions included), as an
        int whose byte i is 1 when i is a cut (0 and 256 always are); kept (templates are asked
        once per document that splices them)."""
        if self._cut_mask is None:
            out = int.from_bytes(self._edge_cuts, "little")  # what edge_cuts(self.edges, ...) gives
            for r in self.region_tuples:
                out |= r[5].cut_mask() if r[6] is not None else _dfa_cut_mask(r[5])
            self._cut_mask = out
        return self._cut_mask

    def region_specs(self) -> list[tuple]:
        """The regions as `_subset.c` reads them: (first, last, end, start, kind, flags, a, b),
        kind 0 an embedded DFA (a: its byte ranges, b: its accepting flags), kind 1 a lexeme
        (a: its template's flat moves, b: None), kind 2 a counted repetition (a: its item's flat
        moves, b: its bounds), kind 3 a `CountedDFA` (a: its byte ranges, b: `CountedDFA.spec`);
        flags: 1 its start keys it, 2 open-ended."""
        out = []
        for first, last, end, start, moves, source, node, open_ended, counted in self.region_tuples:
            if counted:
                kind, a, b = 2, source.moves, (node.min, node.max)
            elif getattr(source, "counted_dfa", False):
                kind, a, b = 3, byte_ranges(source), source.spec()
            else:
                kind, a, b = (1, source.moves, None) if node is not None else _dfa_spec_tail(source)
            out.append((first, last, end, start, kind, (moves is not None) | 2 * open_ended, a, b))
        return out

    def move_counts(self, q: int) -> tuple[int, int]:
        """(epsilon moves, byte edges) out of own state `q` (not a region's)."""
        eps_lo, eps_hi = _INT32_PAIR.unpack_from(self.moves, 4 * (1 + q))
        edge_lo, edge_hi = _INT32_PAIR.unpack_from(self.moves, 4 * (2 + self.num_states + q))
        return eps_hi - eps_lo, edge_hi - edge_lo


def _region(first: int, last: int, end: int, start: int, start_moves: tuple[int, int] | None,
            source: "DFA | NFA", node: Node | None, open_ended: bool, counted: bool) -> Region:
    """A region as `_nfa_build.build` reports it: an embedded DFA (`node` None) or a lexeme."""
    if node is None:
        return Region(first, last, end, dfa=source, start=start, start_moves=start_moves)
    return Region(first, last, end, node=node, start=start, start_moves=start_moves, template=source,
                  open_ended=open_ended, counted=counted)


def _counted_item(node: Node, budget: CompileBudget, dfa_of: Callable[[Node], DFA]) -> "NFA | None":
    """The NFA of the item a lexeme's own automaton counts over (see `NFA`): for a repetition
    bounded at two or more, of an item with a non-empty language; else None (built whole)."""
    if not isinstance(node, Repeat) or node.max is None or node.max < 2:
        return None
    item = NFA(node.item, budget, dfa_of)
    return None if item.empty else item


def _whole(dfa: DFA) -> tuple[tuple[tuple[tuple[int, int, int], ...], ...], bytes]:
    """What embedding a DFA whole needs: its byte ranges and accepting flags."""
    return _dfa_spec_tail(dfa)[1:]


def _dfa_cut_mask(dfa: DFA) -> int:
    """The bytes where a DFA's edges start or end, as `NFA.cut_mask` spells them (cached)."""
    got = dfa._cache.get("cut_mask")
    if got is None:
        flags = bytearray(257)
        edge_cuts(byte_ranges(dfa), flags)
        got = dfa._cache["cut_mask"] = int.from_bytes(flags, "little")
    return got


def _dfa_spec_tail(dfa: DFA) -> tuple:
    """(kind, byte ranges, accepting flags) of a region embedding `dfa` (cached)."""
    got = dfa._cache.get("spec_tail")
    if got is None:
        got = dfa._cache["spec_tail"] = (0, byte_ranges(dfa), accepting_bytes(dfa))
    return got


def region_tables(dfa: DFA) -> None:
    """Build now what embedding `dfa` as a region of a document's NFA needs (cached on it): its
    byte ranges, accepting flags and cut mask.  For DFAs built at start-up (formats, the any-JSON
    value): else the first schema that embeds one builds them (email's 1,257 states: ~1 ms)."""
    _dfa_spec_tail(dfa)
    _dfa_cut_mask(dfa)


def byte_ranges(dfa: DFA) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """Per state, its transitions as (lo, hi, target) byte ranges without the dead state (cached;
    untracked tuples: a full collection does not scan them)."""
    got = dfa._cache.get("byte_ranges")
    if got is None:
        table = np.ascontiguousarray(dfa.table, dtype=np.int32)
        got = dfa._cache["byte_ranges"] = table_ranges(table, table.shape[0])  # dead state: no run
    return got


def accepting_bytes(dfa: DFA) -> bytes:
    """A DFA's accepting flags, a byte per state (cached)."""
    got = dfa._cache.get("accepting_bytes")
    if got is None:
        got = dfa._cache["accepting_bytes"] = np.asarray(dfa.accepting, dtype=np.uint8).tobytes()
    return got
