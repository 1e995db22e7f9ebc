"""``uniqueItems: true`` over unbounded items: tag the unique arrays, check the matcher can tell
them apart, and compile the automata the matcher needs.

The lowering writes each such array as usual, preceded by the byte `TAG` (`tagged`; `OPEN_TAG`
where its items are any JSON value: the matcher reads their freshness off its scanner,
`unique_open`).  The grammar proper is that IR without tags (the language with no uniqueness: its token masks as always); the
*tagged* automaton, compiled beside it, tells the matcher which `[` opens a unique array, and the
matcher compares the items (`formwork.grammar.unique_tracker`).  That needs:

* a regular array: in a recursive schema, one whose items reach no rule cycle, an island of the
  context-free grammar tracked on its tagged configuration automaton (`unique_islands`);
* no tag under a complement or an intersection of two different languages (``oneOf`` branches
  minus each other), where removing the tags would not commute with the operation.  Each is
  refused naming the ``uniqueItems`` pointers.

Where one `[` may open a unique array or another one (``anyOf`` branches that disagree on
``uniqueItems`` at the same place, disjoint ``oneOf`` branches that share a prefix) the tagged
automaton moves both on `TAG` and on ``[``; the union is the language, so the matcher follows
both readings and refuses a duplicate only where every live reading does (`unique_tracker`).
"""
from __future__ import annotations

from typing import Any, Optional

from formwork.grammar.budget import CompileBudget
from formwork.grammar.ir import EMPTY, And, Bytes, Grammar, Node, Not, children, map_children, seq
from formwork.grammar.ir_walk import bottom_up
from formwork.grammar.json_schema.errors import UnsupportedSchemaError
from formwork.grammar.json_schema.unique_islands import recursive_array
from formwork.grammar.shared_nodes import is_shared, share
from formwork.grammar.unique_open import OPEN_TAG
from formwork.grammar.unique_prepare import prepare_regions
from formwork.grammar.unique_scan import TAG

_TAG = Bytes(bytes([TAG]))
_OPEN_TAG = Bytes(bytes([OPEN_TAG]))
_TAG_BYTES = (_TAG.value, _OPEN_TAG.value)


def tagged(array: Node, open_values: bool = False) -> Node:
    """The array node `array` marked as one whose items must be distinct (`open_values`: its items
    are any JSON value, its length alone bounded)."""
    return seq(_OPEN_TAG if open_values else _TAG, array)


def _has_tag(data: bytes) -> bool:
    return any(tag in data for tag in _TAG_BYTES)


def strip_tags(node: Node | Grammar) -> Node | Grammar:
    """The IR without its tags (sub-nodes without tags are kept as they are)."""
    memo: dict[int, Node] = {}

    def strip(n: Node) -> Node:
        if isinstance(n, Bytes):
            if not _has_tag(n.value):
                return n
            rest = n.value.replace(_TAG.value, b"").replace(_OPEN_TAG.value, b"")
            return Bytes(rest) if rest else EMPTY
        if all(memo[id(c)] is c for c in children(n)):  # no tag below (compared by identity: deep)
            return n
        if is_shared(n):  # still marked: unmarked, it would be built once per use
            return share(memo[id(n.item)])
        return map_children(n, lambda c: memo[id(c)])

    if isinstance(node, Grammar):
        return Grammar({name: bottom_up(body, strip, memo) for name, body in node.rules.items()}, node.start)
    return bottom_up(node, strip, memo)


def misplaced(node: Node) -> Optional[str]:
    """Why the tags of `node` cannot be tracked (a tag under a complement or under an
    intersection of two different languages), or None."""
    has_tag: dict[int, bool] = {}
    bottom_up(node, lambda n: _has_tag(n.value) if isinstance(n, Bytes)
               else any(has_tag[id(c)] for c in children(n)), has_tag)
    seen: set[int] = set()
    stack = [node]
    while stack:  # depth first, children in order
        n = stack.pop()
        if id(n) in seen or not has_tag[id(n)]:
            continue
        seen.add(id(n))
        if isinstance(n, Not):
            return "a unique array under a complement (not, if/else, or overlapping oneOf branches)"
        if isinstance(n, And) and n.a != n.b:
            return "a unique array inside an intersection (overlapping oneOf branches)"
        stack.extend(reversed(children(n)))
    return None


def unique_arrays(node: Node | Grammar, pointers: tuple[str, ...], compile_node: Any,
                  budget: CompileBudget, arrays: tuple[Node, ...]) -> tuple[Node | Grammar, Any]:
    """(the grammar's IR without tags, what its matchers need), or an `UnsupportedSchemaError`
    naming the first pointer; `compile_node(node)` compiles the tagged IR (a `Grammar` when the
    schema is recursive: `unique_islands`, where `arrays` are the unique arrays' IR)."""
    from formwork.grammar.unique_tracker import UniqueArrays  # the matcher's side

    where = pointers[0]
    more = f" (and {len(pointers) - 1} more)" if len(pointers) > 1 else ""
    if isinstance(node, Grammar):
        recursive = recursive_array(node, pointers, arrays, budget)
        if recursive is not None:
            raise UnsupportedSchemaError("uniqueItems", recursive, (
                "distinct items are tracked where the array is regular; the items of this one "
                "refer back to a recursive part of the schema"))
    bodies = node.rules.values() if isinstance(node, Grammar) else (node,)
    reason = next(filter(None, map(misplaced, bodies)), None)
    if reason:
        raise UnsupportedSchemaError("uniqueItems", where, f"distinct items cannot be tracked in "
                                                           f"{reason}{more}")
    unique = UniqueArrays(compile_node(node), pointers)
    if not isinstance(node, Grammar):
        prepare_regions(unique)  # the regions' analysis at compile time, where the automaton is small
    return strip_tags(node), unique


def settle_unique_arrays(lowered: Any, compile_node: Any, budget: CompileBudget
                         ) -> tuple[Node | Grammar, Any]:
    """`unique_arrays` for a lowered schema (`lowered.node`, `.unique_arrays`): when lenient, a
    refusal becomes a warning of `lowered` and the arrays' items are not compared."""
    try:
        return unique_arrays(lowered.node, lowered.unique_arrays, compile_node, budget,
                             lowered.unique_nodes)
    except UnsupportedSchemaError as exc:
        if not lowered.lenient:
            raise
        lowered.warnings.append(str(exc))
        return strip_tags(lowered.node), None


def embedded_node(lowered: Any, context: str) -> Node | Grammar:
    """The IR of a lowered schema that becomes part of a larger language (`context`: a tagged region,
    the answer after reasoning): its unique arrays' items cannot be compared there (the matcher's
    scanner reads whole JSON documents), so they are refused, or dropped with a warning if lenient."""
    if not lowered.unique_arrays:
        return lowered.node
    where = lowered.unique_arrays[0]
    error = UnsupportedSchemaError("uniqueItems", where, f"distinct items over unbounded values are tracked "
                                                         f"in whole JSON documents only, not {context}")
    if not lowered.lenient:
        raise error
    lowered.warnings.append(str(error))
    return strip_tags(lowered.node)
