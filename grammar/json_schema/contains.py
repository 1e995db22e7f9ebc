"""``contains``/``minContains``/``maxContains``: a counting automaton over the elements.

Each element is split by the `contains` subschemas it matches: the elements that match a subset of
them and not the rest (``not`` of each, as `negation` lowers it: exact where the complement is,
refused with the reason otherwise); the array language walks the elements
left to right counting the matches of each `contains`, saturated at ``maxContains + 1`` (or at
``minContains`` when there is no maximum), and ends only where every count is within its bounds.
The element position is tracked up to the last position that matters (``prefixItems``,
``minItems``, ``maxItems``): the automaton has (positions x counts) states, within a budget.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import EMPTY, NOTHING, Node, Nothing, alt, repeat, seq
from formwork.grammar.json_schema.expand import Sub
from formwork.grammar.json_schema.values import freeze
from formwork.schemas.keywords import DRAFT_KEYWORDS

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

MAX_CONTAINS = 3          # `contains` keywords merged into one array
MAX_COUNT_STATES = 256    # product of the saturated counters
MAX_TRACKED_STATES = 4096  # (position, counts) states of the counting automaton

Counts = tuple[int, ...]
Klass = tuple[Node, Counts]  # an element language and how it moves each counter


@dataclass(frozen=True, slots=True)
class ContainsSpec:
    """One `contains` (its subschema, and a subschema holding where it does not) with its
    bounds."""

    sub: Sub
    negated: Sub
    lo: int
    hi: Optional[int]

    @property
    def cap(self) -> int:
        return self.hi + 1 if self.hi is not None else self.lo


def contains_bounds(lw: "Lowerer", subs: list[Sub]) -> list[tuple[Sub, Sub, int, Optional[int]]]:
    """(its schema object, subschema, minContains, maxContains) of each `contains` of an array
    conjunction that can fail (``minContains: 0`` without a maximum never does)."""
    # the document's draft; a subschema of another draft's resource (through `$ref`) is held
    # to the stricter reading of minContains/maxContains
    counted = "minContains" in DRAFT_KEYWORDS.get(lw.doc.draft.name, ())
    out = []
    for s in subs:
        sch = s.schema
        if "contains" not in sch:
            continue
        lo = int(sch.get("minContains", 1))
        hi = int(sch["maxContains"]) if "maxContains" in sch else None
        if not counted:
            lo = max(lo, 1)
        if lo or hi is not None:
            out.append((s, lw.expander.child(s, "contains"), lo, hi))
    return out


def contains_specs(lw: "Lowerer", subs: list[Sub], depth: int) -> list[ContainsSpec]:
    """The `contains` constraints of an array conjunction (its elements' complements are
    refused, where they cannot be built, when the elements are lowered)."""
    specs = [ContainsSpec(sub, lw.expander.negation(owner, sub, "contains"), lo, hi)
             for owner, sub, lo, hi in contains_bounds(lw, subs)]
    if len(specs) > MAX_CONTAINS:
        raise GrammarBudgetError(f"more than {MAX_CONTAINS} `contains` keywords apply to the array "
                                 f"at {subs[0].pointer or '#'}")
    states = math.prod(spec.cap + 1 for spec in specs)
    if states > MAX_COUNT_STATES:
        raise GrammarBudgetError(
            f"the `contains` counters of the array at {subs[0].pointer or '#'} need {states} "
            f"states (more than {MAX_COUNT_STATES}: minContains/maxContains too large)")
    return specs


def element_classes(lw: "Lowerer", conj: list[Sub], specs: list[ContainsSpec], depth: int
                    ) -> list[Klass]:
    """The elements of the conjunction `conj`, split by which `specs` they match."""
    out = []
    for flags in itertools.product((0, 1), repeat=len(specs)):
        node = lw.lower_subs([*conj, *(s.sub if f else s.negated for s, f in zip(specs, flags))],
                             depth)
        if not isinstance(node, Nothing):  # one automaton, spliced at every position
            out.append((lw.value_product(freeze(node)), flags))
    return out


def counted_items(positions: list[list[Klass]], tail: list[Klass], comma: Node,
                  specs: list[ContainsSpec], min_items: int, max_items: Optional[int],
                  pointer: str) -> tuple[Node, bool]:
    """(the non-empty element lists, whether the empty array is valid) for element classes per
    position (`tail` past them)."""
    counting = _Counting(positions, tail, comma, specs, min_items, max_items)
    states = (counting.last + 1) * math.prod(s.cap + 1 for s in specs)
    if states > MAX_TRACKED_STATES:
        raise GrammarBudgetError(
            f"the array at {pointer or '#'} counts `contains` matches over {counting.last} "
            f"positions ({states} states, more than {MAX_TRACKED_STATES}): minItems/maxItems "
            "too large beside minContains/maxContains")
    return counting.items(), min_items == 0 and _accepts(specs, (0,) * len(specs))


def _accepts(specs: list[ContainsSpec], counts: Counts) -> bool:
    return all(s.lo <= c and (s.hi is None or c <= s.hi) for s, c in zip(specs, counts))


class _Counting:
    """The element lists as a DAG of (position, counts) states, with self-loops where both are
    saturated; built bottom-up (counts only grow, positions only advance)."""

    def __init__(self, positions: list[list[Klass]], tail: list[Klass], comma: Node,
                 specs: list[ContainsSpec], min_items: int, max_items: Optional[int]):
        self.positions, self.tail, self.comma, self.specs = positions, tail, comma, specs
        self.min_items, self.max_items = min_items, max_items
        self.last = max_items if max_items is not None else max(len(positions), min_items, 1)
        self.caps = [s.cap for s in specs]

    def _classes(self, i: int) -> list[Klass]:
        return self.positions[i] if i < len(self.positions) else self.tail

    def _step(self, counts: Counts, flags: Counts) -> Counts:
        return tuple(min(c + f, cap) for c, f, cap in zip(counts, flags, self.caps))

    def items(self) -> Node:
        """The non-empty element lists (the first element has no comma)."""
        if self.max_items == 0:
            return NOTHING
        every = sorted(itertools.product(*(range(cap + 1) for cap in self.caps)), key=sum,
                       reverse=True)
        after: dict[tuple[int, Counts], Node] = {}
        for i in range(self.last, 0, -1):
            for counts in every:
                after[(i, counts)] = self._after(i, counts, after)
        zero = (0,) * len(self.specs)
        return alt(*(seq(node, after[(1, self._step(zero, flags))])
                     for node, flags in self._classes(0)))

    def _after(self, i: int, counts: Counts, after: dict[tuple[int, Counts], Node]) -> Node:
        """The elements after the i-th (each with its comma), `counts` matches so far; `after`
        holds the states it moves to."""
        saturated = self.max_items is None and i == self.last
        options = []
        if i >= self.min_items and _accepts(self.specs, counts):
            options.append(EMPTY)
        loop = []
        if self.max_items is None or i < self.max_items:
            nxt = i if saturated else i + 1
            for node, flags in self._classes(i):
                moved = self._step(counts, flags)
                if saturated and moved == counts:
                    loop.append(node)
                else:
                    options.append(seq(self.comma, node, after[(nxt, moved)]))
        node = alt(*options)
        if loop and not isinstance(node, Nothing):
            node = seq(repeat(seq(self.comma, alt(*loop)), 0, None), node)
        return node
