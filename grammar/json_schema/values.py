"""Literal JSON values (``const``/``enum``) and the bounded "any JSON value" language as IR."""
from __future__ import annotations

import json
import math
from typing import Any, Iterable

from formwork.grammar.budget import check_budget
from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import And, Node, Not, RuleRef, alt, children, lit, repeat, seq
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema.numbers import JSON_NUMBER
from formwork.grammar.json_schema.options import Whitespace
from formwork.grammar.json_schema.strings import QUOTE, literal_content, quoted, string_content


def freeze(node: Node) -> Node:
    """Ask the automaton builder to compile `node` once and splice the DFA wherever it is used
    (an intersection with itself is the same language, and `And` operands are memoised)."""
    return And(node, node)


def number_text(value: float | int) -> str:
    """The canonical spelling of a JSON number: integral values without a fraction."""
    if isinstance(value, bool):
        raise GrammarError("booleans are not numbers")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise GrammarError(f"{value!r} is not a JSON number")
    if value.is_integer() and abs(value) < 2 ** 63:
        return str(int(value))
    return json.dumps(value)


def container(ws: Whitespace, depth: int, open_: str, close: str, items: Node,
              may_be_empty: bool) -> Node:
    """``open items close`` with the policy's padding; `items` is the non-empty member list."""
    full = seq(lit(open_), ws.open(depth), items, ws.close(depth), lit(close))
    if may_be_empty:
        return alt(lit(open_ + close), full)
    return full


def value_node(value: Any, ws: Whitespace, depth: int) -> Node:
    """The spellings of one JSON value (canonical scalars; members in the value's own order)."""
    if value is None:
        return lit("null")
    if value is True:
        return lit("true")
    if value is False:
        return lit("false")
    if isinstance(value, (int, float)):
        return lit(number_text(value))
    if isinstance(value, str):
        return seq(QUOTE, literal_content(value), QUOTE)
    if isinstance(value, list):
        if not value:
            return lit("[]")
        items = [value_node(v, ws, depth + 1) for v in value]
        body = seq(items[0], *(seq(ws.comma(depth), v) for v in items[1:]))
        return container(ws, depth, "[", "]", body, False)
    if isinstance(value, dict):
        if not value:
            return lit("{}")
        members = [seq(QUOTE, literal_content(k), QUOTE, ws.colon(), value_node(v, ws, depth + 1))
                   for k, v in value.items()]
        body = seq(members[0], *(seq(ws.comma(depth), m) for m in members[1:]))
        return container(ws, depth, "{", "}", body, False)
    raise GrammarError(f"{type(value).__name__} is not a JSON value")


class AnyValue:
    """Any JSON value nested at most `levels` containers deep (memoised per level and depth)."""

    def __init__(self, ws: Whitespace, indent_sensitive: bool):
        self.ws = ws
        self.indent_sensitive = indent_sensitive
        self._memo: dict[tuple[int, int], Node] = {}
        self.calls = 0  # grows with every value asked for (by any lowering: a hint, not a count)
        self.scalar = alt(lit("null"), lit("true"), lit("false"), regex(JSON_NUMBER),
                          quoted(string_content()))

    def __call__(self, levels: int, depth: int) -> Node:
        self.calls += 1
        key = (levels, depth if self.indent_sensitive else 0)
        got = self._memo.get(key)
        if got is not None:
            return got
        if levels <= 0:
            node = self.scalar
        else:
            inner = self(levels - 1, depth + 1)
            ws = self.ws
            items = seq(inner, repeat(seq(ws.comma(depth), inner), 0, None))
            member = seq(quoted(string_content(canonical=True)), ws.colon(), inner)
            members = seq(member, repeat(seq(ws.comma(depth), member), 0, None))
            node = freeze(alt(self.scalar, container(ws, depth, "[", "]", items, True),
                              container(ws, depth, "{", "}", members, True)))
        self._memo[key] = node
        return node

    def in_product(self, root: Node, levels: int) -> bool:
        """Whether a value of this many `levels` lies inside an operand of an intersection or a
        complement in `root` (other than its own frozen form): operands are built as complete
        automata, whose size grows with the levels.  One pass finds the outermost products outside
        the memoised values of at most `levels` (which hold no deeper value); only those are
        searched (a value inside a nested product is inside the outer one too).  The lowering
        walks `root` only to confirm that a product it recorded holding one is still in it."""
        memo = tuple(self._memo.items())  # a snapshot: other compiles add to it meanwhile
        return self.in_products(_products(root, {id(node) for (n, _), node in memo if n <= levels}),
                                levels)

    def in_products(self, products: Iterable[Node], levels: int) -> bool:
        """Whether a value of this many `levels` lies strictly inside one of `products`."""
        values = {id(node) for (n, _), node in tuple(self._memo.items()) if n == levels}
        return any(_holds(product, values) for product in products)


def _products(root: Node, skip: set[int]) -> list[Node]:
    """The outermost `And` / `Not` nodes in `root`, not searching inside the nodes whose ids are in
    `skip`."""
    stack: list[Node] = [] if id(root) in skip else [root]
    seen = skip | {id(root)}
    products: list[Node] = []
    popped = 0
    while stack:
        popped += 1
        if popped & 0xFF == 0:
            check_budget("finding open values in products")
        node = stack.pop()
        if isinstance(node, (And, Not)):
            products.append(node)
            continue
        for child in children(node):
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return products


def _holds(root: Node, values: set[int]) -> bool:
    """Whether a node whose id is in `values` lies strictly inside `root`."""
    seen = {id(root)}
    stack = [root]
    while stack:
        check_budget("finding open values in products")
        for child in children(stack.pop()):
            if id(child) in values:
                return True
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return False


ANY_JSON_RULE = "<any JSON value>"


def any_json_rules(ws: Whitespace) -> dict[str, Node]:
    """The exact (unbounded nesting) language of any JSON value as one recursive grammar rule."""
    value = RuleRef(ANY_JSON_RULE)
    scalar = alt(lit("null"), lit("true"), lit("false"), regex(JSON_NUMBER), quoted(string_content()))
    items = seq(value, repeat(seq(ws.comma(0), value), 0, None))
    member = seq(quoted(string_content(canonical=True)), ws.colon(), value)
    members = seq(member, repeat(seq(ws.comma(0), member), 0, None))
    return {ANY_JSON_RULE: alt(scalar, container(ws, 0, "[", "]", items, True),
                               container(ws, 0, "{", "}", members, True))}
