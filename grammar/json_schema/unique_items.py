"""``uniqueItems: true`` over finite element domains: an automaton over the set of items seen.

Where every element position has a finite domain (``enum``/``const``, booleans and null, a small
integer range; each value kept only if `jsonschema` accepts it against the position's subschemas),
the array is a sequence of distinct domain values: its state is the set of values used so far
(which also fixes the position, and the `contains` counts, decided per value with `jsonschema`).
The reachable sets are bounded (`MAX_SETS`); past that, and for other elements, the array is
tagged and the matcher compares its items (`unique_arrays`).
"""
from __future__ import annotations

from math import comb
from typing import TYPE_CHECKING, Any, Optional, Union

from formwork.grammar.ir import EMPTY, Node, alt, seq
from formwork.grammar.json_schema.expand import Sub
from formwork.grammar.json_schema.values import value_node
from formwork.grammar.shared_nodes import share
from formwork.grammar.unique_scan import value_key

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

MAX_RANGE = 64   # integers enumerated from one bounded range
MAX_SETS = 4096  # reachable sets of distinct items
_FINITE_TYPES = {"null": [None], "boolean": [False, True]}


def _candidates(lw: "Lowerer", alternative: list[Sub]) -> Optional[list[Any]]:
    """A finite superset of the values of one expanded conjunction, or None."""
    types: Optional[set[str]] = None
    lo = hi = None
    for s in alternative:
        sch = s.schema
        if not isinstance(sch, dict):
            continue
        if "const" in sch:
            return [sch["const"]]
        if "enum" in sch:
            return list(sch["enum"])
        if "type" in sch:
            t = sch["type"]
            found = {t} if isinstance(t, str) else set(t)
            types = found if types is None else types & found
        for kw in ("minimum", "exclusiveMinimum"):
            if isinstance(sch.get(kw), (int, float)) and not isinstance(sch[kw], bool):
                lo = sch[kw] if lo is None else max(lo, sch[kw])
        for kw in ("maximum", "exclusiveMaximum"):
            if isinstance(sch.get(kw), (int, float)) and not isinstance(sch[kw], bool):
                hi = sch[kw] if hi is None else min(hi, sch[kw])
    if types is None:
        return None
    out: list[Any] = []
    for t in sorted(types):
        if t in _FINITE_TYPES:
            out.extend(_FINITE_TYPES[t])
        elif t == "integer" and lo is not None and hi is not None and hi - lo <= MAX_RANGE:
            out.extend(range(int(lo) - 1, int(hi) + 2))
        else:
            return None
    return out


def finite_domain(lw: "Lowerer", conj: list[Sub]) -> Optional[list[Any]]:
    """The values (one per equality class, canonical order) the conjunction `conj` allows, or
    None when they are not known to be few."""
    alts = [[]] if not conj else None
    for s in conj:
        expanded = lw.expand(s)
        alts = expanded if alts is None else lw.expander._product(alts, expanded, s)
    values: dict[str, Any] = {}
    for a in alts:
        found = _candidates(lw, a)
        if found is None:
            return None
        for v in found:
            values.setdefault(value_key(v), v)
    return [v for v in values.values() if all(lw._is_valid(v, s) for s in conj)]


def unique_items(lw: "Lowerer", domains: list[list[Any]], tail: list[Any], comma: Node,
                 depth: int, min_items: int, max_items: Optional[int],
                 contains: list[tuple[Sub, Sub, int, Optional[int]]]
                 ) -> Union[tuple[Node, bool], str]:
    """(the non-empty element lists of distinct values, whether [] is valid) for the domain of
    each position (`tail` past them), or why the sets of items seen are too many."""
    index: dict[str, int] = {}
    values: list[Any] = []
    for v in [*(v for d in domains for v in d), *tail]:
        if value_key(v) not in index:
            index[value_key(v)] = len(values)
            values.append(v)
    n = len(values)
    longest = n if max_items is None else min(n, max_items)
    sets = sum(comb(n, k) for k in range(longest + 1))
    if sets > MAX_SETS:
        return (f"{n} distinct element values make {sets} sets of items seen (more than "
                f"{MAX_SETS}); lower maxItems or the values")
    allowed = [[index[value_key(v)] for v in d] for d in domains]
    tail_ids = [index[value_key(v)] for v in tail]
    nodes = [value_node(v, lw.ws, depth + 1) for v in values]
    matches = [[lw._is_valid(v, c) for v in values] for _, c, _, _ in contains]

    def accept(used: int) -> bool:
        size = bin(used).count("1")
        if size < min_items:
            return False
        for hits, (_, _, lo, hi) in zip(matches, contains):
            count = sum(1 for i in range(n) if used >> i & 1 and hits[i])
            if count < lo or (hi is not None and count > hi):
                return False
        return True

    def choices(used: int) -> list[int]:
        size = bin(used).count("1")
        if max_items is not None and size >= max_items:
            return []
        ids = allowed[size] if size < len(allowed) else tail_ids
        return [i for i in ids if not used >> i & 1]

    order: list[int] = [0]
    seen = {0}
    for used in order:  # breadth first: the reachable sets
        for i in choices(used):
            if used | 1 << i not in seen:
                seen.add(used | 1 << i)
                order.append(used | 1 << i)
    after: dict[int, Node] = {}
    for used in reversed(order):
        options = [EMPTY] if accept(used) else []
        options += [seq(comma, nodes[i], after[used | 1 << i]) for i in choices(used)]
        after[used] = share(alt(*options))  # reached by every order of its items: built once
    first = alt(*(seq(nodes[i], after[1 << i]) for i in choices(0)))
    return first, accept(0)
