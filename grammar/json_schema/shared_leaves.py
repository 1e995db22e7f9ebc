"""Leaf conjunctions lowered once per process, found by their contents.

The usual property schemas ({"type": "string"}, {"type": "string", "format": "date"}, ...) recur
across schemas.  A leaf conjunction (no nested subschema) made only of `LEAF_KEYWORDS` lowers to
the same IR wherever it sits, given the draft and options and, when indenting, its depth: its IR
is kept in `SHARED_LEAVES` under that key (`Lowerer._lower_leaf`).
"""
from __future__ import annotations

from typing import Any, Optional

from formwork.grammar.ir import Node
from formwork.grammar.json_schema.expand import APPLICATORS, CONSTRAINING_KEYWORDS, NEUTRAL_KEYWORDS

_LOCAL_FREE = NEUTRAL_KEYWORDS | set(APPLICATORS)
#: Keywords whose values (with the draft and options) are all a leaf's lowering reads; a leaf
#: made only of them (and annotations or expanded applicators) is lowered once per process.
LEAF_KEYWORDS = frozenset({
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems",
    "minProperties", "maxProperties", "required"}) | _LOCAL_FREE
_LEAF_KEYED = LEAF_KEYWORDS - _LOCAL_FREE  # what a shared leaf's key spells out
#: Keywords a leaf holds none of (keys JSON Schema ignores are no more read than annotations)
_NOT_LEAF = CONSTRAINING_KEYWORDS - LEAF_KEYWORDS
#: ... and a subschema that only expands to itself (a leaf without applicators)
NOT_LEAF_VALUES = _NOT_LEAF | set(APPLICATORS)
MAX_SHARED_LEAVES = 4096
SHARED_LEAVES: dict[tuple, Node] = {}  # by `shared_leaf_key`


def shared_leaf_key(context: Any, depth: int, subs: list[Any]) -> Optional[tuple]:
    """All the lowering of the leaf conjunction `subs` (`expand.Sub`s) depends on: `context` (the
    draft and options; None: nothing is shared), `depth` (0 unless indenting) and its value
    keywords, by `repr` (exact for JSON values, 1, 1.0 and True included, unlike `==`); None
    when it may depend on more (other keywords, say)."""
    if context is None:
        return None
    if len(subs) == 1:  # (the usual leaf: the same key, without the list)
        schema = subs[0].schema
        if not _NOT_LEAF.isdisjoint(schema):
            return None
        return (context, depth, repr({k: v for k, v in schema.items() if k in _LEAF_KEYED}))
    texts = []
    for s in subs:
        schema = s.schema
        if not _NOT_LEAF.isdisjoint(schema):
            return None
        # value keywords only: applicators are expanded into the conjunction already (an
        # anyOf of n consts would otherwise be spelled out in each of its n leaves' keys)
        texts.append(repr({k: v for k, v in schema.items() if k in _LEAF_KEYED}))
    return (context, depth, *texts)


def keep_leaf(key: tuple, node: Node) -> None:
    """Keep `node` as the leaf of `key` (the table is cleared when full)."""
    if len(SHARED_LEAVES) >= MAX_SHARED_LEAVES:
        SHARED_LEAVES.clear()
    SHARED_LEAVES[key] = node
