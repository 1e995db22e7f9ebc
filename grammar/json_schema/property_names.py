"""``propertyNames``: every key of an object is a string valid under the subschema.

A declared name (``properties``, ``required``) is checked with `jsonschema` once: a name the
subschema rejects cannot appear (the object is impossible if it is required).  Extra keys are
intersected with the subschema's string language (its quoted spellings: pattern, length,
enum/const, format), which is sound whatever that language is (an intersection only narrows).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from formwork.grammar.ir import And, Node
from formwork.grammar.json_schema.expand import Sub

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

#: The restriction to strings (a module constant: the lowering's memos key conjunctions by the
#: identity of their schemas).
STRING = {"type": "string"}


class PropertyNames:
    """The ``propertyNames`` subschemas of an object conjunction."""

    def __init__(self, lw: "Lowerer", subs: list[Sub], depth: int):
        self.lw = lw
        self.subs = subs
        self.keys: Optional[Node] = None
        if subs:
            self.keys = lw.lower_subs([*subs, Sub(STRING, None, subs[0].pointer)], depth)

    def allows(self, name: str) -> bool:
        """Whether every subschema accepts the key `name`."""
        return all(self.lw._is_valid(name, s) for s in self.subs)

    def restrict(self, quoted_key: Node) -> Node:
        """A key language (with its quotes) narrowed to the keys every subschema accepts."""
        return quoted_key if self.keys is None else And(quoted_key, self.keys)
