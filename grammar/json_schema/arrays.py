"""Arrays: merge the array keywords of a conjunction of subschemas and lower them to IR.

Element i obeys every subschema's positional schema for i (``prefixItems``, or draft-07 ``items``
as a list), else its schema for the remaining elements (``items``, ``additionalItems`` or a plain
``unevaluatedItems``); ``minItems``/``maxItems`` bound the length, and the first position no value
can take caps it.  ``contains`` counts matching elements (`contains`); ``uniqueItems: true``
tracks the set of items seen over finite element domains (`unique_items`), and otherwise tags the
array for the matcher, which compares its items (`unique_arrays`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from formwork.grammar.ir import EMPTY, NOTHING, Node, Nothing, alt, lit, repeat, seq
from formwork.grammar.json_schema.contains import (
    contains_bounds, contains_specs, counted_items, element_classes,
)
from formwork.grammar.json_schema.expand import CONSTRAINING_KEYWORDS, Sub
from formwork.grammar.json_schema.unevaluated import plain_unevaluated
from formwork.grammar.json_schema.unique_arrays import tagged
from formwork.grammar.json_schema.unique_items import finite_domain, unique_items
from formwork.grammar.json_schema.values import container
from formwork.grammar.shared_nodes import share
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer


def lower_array(lw: "Lowerer", subs: list[Sub], depth: int) -> Node:
    draft07 = lw.doc.draft.name == "draft-07"
    prefixes: list[list[Sub]] = []
    rests: list[Optional[Sub]] = []
    min_items, max_items = 0, None
    for s in subs:
        sch = s.schema
        prefix: list[Sub] = []
        rest: Optional[Sub] = None
        items = sch.get("items")
        if draft07 and isinstance(items, list):
            prefix = [lw.expander.child(s, "items", i) for i in range(len(items))]
            if "additionalItems" in sch:
                rest = lw.expander.child(s, "additionalItems")
        else:
            if "prefixItems" in sch and not draft07:
                prefix = [lw.expander.child(s, "prefixItems", i)
                          for i in range(len(sch["prefixItems"]))]
            if "items" in sch:
                rest = lw.expander.child(s, "items")
            elif plain_unevaluated(sch, "unevaluatedItems"):
                rest = lw.expander.child(s, "unevaluatedItems")
        prefixes.append(prefix)
        rests.append(rest)
        min_items = max(min_items, int(sch.get("minItems", 0)))
        if "maxItems" in sch:
            m = int(sch["maxItems"])
            max_items = m if max_items is None else min(max_items, m)
    if max_items is not None and max_items < min_items:
        return NOTHING
    longest = max((len(p) for p in prefixes), default=0)

    def element_subs(i: Optional[int]) -> list[Sub]:
        """The subschemas of the element at position i (None: positions past every prefix)."""
        conj = []
        for prefix, rest in zip(prefixes, rests):
            if i is not None and i < len(prefix):
                conj.append(prefix[i])
            elif rest is not None:
                conj.append(rest)
        return conj

    comma = lw.ws.comma(depth)
    positions = [lw.lower_subs(element_subs(i), depth + 1) for i in range(longest)]
    tail_elem = lw.lower_subs(element_subs(None), depth + 1)
    # the first impossible position caps the length
    for i, node in enumerate(positions + [tail_elem]):
        if isinstance(node, Nothing):
            max_items = i if max_items is None else min(max_items, i)
            break
    if max_items is not None and max_items < min_items:
        return NOTHING

    unique = [s for s in subs if s.schema.get("uniqueItems") is True]
    if unique:
        domains = [finite_domain(lw, element_subs(i)) for i in range(longest)]
        if max_items is not None and max_items <= longest:
            tail_domain: Optional[list] = []
        else:
            tail_domain = finite_domain(lw, element_subs(None))
        if tail_domain is not None and None not in domains:
            made = unique_items(lw, domains, tail_domain, comma, depth, min_items, max_items,
                                contains_bounds(lw, subs))
            if not isinstance(made, str):
                items, may_be_empty = made
                return _bracketed(lw, depth, items, may_be_empty)
        # the matcher compares the items (`unique_arrays`): the array is tagged as unique
        lw.unique_arrays.append(child(unique[0].pointer, "uniqueItems"))
        lw.changes += 1  # (see `Lowerer.changes`)
        array = _plain_array(lw, subs, depth, element_subs, positions, tail_elem, longest, min_items,
                             max_items)
        lw.unique_nodes.append(array)
        return tagged(array, _open_items(lw, subs, depth, element_subs(None), tail_elem, longest))
    return _plain_array(lw, subs, depth, element_subs, positions, tail_elem, longest, min_items,
                        max_items)


def _open_items(lw: "Lowerer", subs: list[Sub], depth: int, items: list[Sub], tail_elem: Node,
                longest: int) -> bool:
    """Whether every element is any JSON value of the bounded nesting, or any string, and only the
    length is bounded (no positional schema, no ``contains``): `unique_open` decides its freshness."""
    if longest or any("contains" in s.schema for s in subs):
        return False
    if items and all(_any_string(s.schema) for s in items):
        return True
    return lw.options.max_nesting_depth is not None and tail_elem is lw.unconstrained(depth + 1)


_NOT_TYPE = CONSTRAINING_KEYWORDS - {"type"}


def _any_string(schema: Any) -> bool:
    """Whether `schema` is ``{"type": "string"}`` but for annotations (and keys JSON Schema ignores)."""
    return isinstance(schema, dict) and schema.get("type") == "string" and \
        _NOT_TYPE.isdisjoint(schema)


def _plain_array(lw: "Lowerer", subs: list[Sub], depth: int, element_subs: Any,
                 positions: list[Node], tail_elem: Node, longest: int, min_items: int,
                 max_items: Optional[int]) -> Node:
    """The array of the merged keywords but uniqueness: contains counts, or plain elements."""
    comma = lw.ws.comma(depth)
    specs = contains_specs(lw, subs, depth + 1)
    may_be_empty = min_items == 0
    if specs:
        classes = [element_classes(lw, element_subs(i), specs, depth + 1) for i in range(longest)]
        tail = element_classes(lw, element_subs(None), specs, depth + 1)
        items, may_be_empty = counted_items(classes, tail, comma, specs, min_items, max_items,
                                            subs[0].pointer)
    elif max_items == 0:
        items = NOTHING
    else:
        items = _array_items(positions, tail_elem, comma, min_items, max_items)
    return _bracketed(lw, depth, items, may_be_empty)


def _bracketed(lw: "Lowerer", depth: int, items: Node, may_be_empty: bool) -> Node:
    """The array of the non-empty element lists `items` (and `[]` if `may_be_empty`)."""
    if isinstance(items, Nothing):
        return lit("[]") if may_be_empty else NOTHING
    return container(lw.ws, depth, "[", "]", items, may_be_empty)


def _array_items(positions: list[Node], tail: Node, comma: Node, min_items: int,
                 max_items: Optional[int]) -> Node:
    """The elements of a non-empty array, the first one present (no leading comma): element i
    is `positions[i]`, past them `tail`; built from the last element that can occur backwards
    (a loop, not a recursive closure: those are reference cycles left for the collector)."""
    longest = len(positions)
    last = longest if max_items is None else min(longest, max_items - 1)
    if last == longest:  # the elements past the positional ones
        lo = max(0, min_items - last - 1)
        hi = None if max_items is None else max_items - last - 1
        if lo == 0 and hi is None:  # `e (, e)*`: both e end at one NFA state, so e is built once
            tail = share(tail)
        node = seq(tail, repeat(seq(comma, tail), lo, hi))
    else:
        node = positions[last]
    for i in range(last - 1, -1, -1):
        more = seq(comma, node)
        node = seq(positions[i], more if i + 1 < min_items else alt(more, EMPTY))
    return node
