"""Options of the JSON Schema lowering, and the whitespace policies between JSON tokens.

Whitespace is never unbounded:

* ``"default"``: no newlines; at most one space after ``,`` and ``:`` (and none elsewhere);
* ``"compact"``: no whitespace at all (``json.dumps(x, separators=(",", ":"))``);
* ``"free"``: up to ``max_whitespace`` characters of ``[ \\t\\n\\r]`` between any two tokens;
* :class:`IndentSpec`: pretty printing exactly as ``json.dumps(x, indent=n)`` lays it out
  (a newline and ``depth * n`` spaces after ``{``, ``[`` and ``,``; ``": "``; empty ``{}`` / ``[]``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Union

from formwork.grammar.errors import GrammarError
from formwork.grammar.ir import EMPTY, ByteSet, Node, lit, optional, repeat, seq


@dataclass(frozen=True)
class IndentSpec:
    """Pretty printing with `indent` spaces per nesting level."""

    indent: int = 2

    def __post_init__(self) -> None:
        if not (0 <= self.indent <= 16):
            raise GrammarError(f"indent must be within 0..16, got {self.indent}")


WhitespaceOption = Union[str, IndentSpec]
NestingOption = Union[int, None, Literal["auto"]]

#: The "auto" bound on any-JSON values inside a constrained schema: their automaton is shared by
#: every schema of a whitespace policy (about 6,300 states, built once per process in ~0.4 s, see
#: `automata.SharedAutomata.warm_any_values`); each level more doubles it.
BOUNDED_NESTING_DEPTH = 6
#: The "auto" bound under an indent policy (every depth of an open value has its own automaton)
#: and where open values lie inside an intersection or a complement (``not``, overlapping
#: ``oneOf``, ``contains``: built as complete automata, whose size the bound multiplies).
SHALLOW_NESTING_DEPTH = 2
# keywords that leave a schema's language "any JSON value of these types"
_OPEN_KEYWORDS = frozenset({"type", "$schema", "$id", "$comment", "title", "description",
                            "examples", "default", "deprecated", "readOnly", "writeOnly"})


def is_open_schema(schema: Any) -> bool:
    """Whether `schema` constrains nothing below its top level: ``true``, ``{}``,
    ``{"type": "object"}``, ``{"type": ["array", "object"]}``... (annotations allowed)."""
    return schema is True or (isinstance(schema, dict) and set(schema) <= _OPEN_KEYWORDS)


def resolve_nesting_depth(max_nesting_depth: NestingOption, schema: Any,
                          whitespace: WhitespaceOption) -> int | None:
    """The nesting bound of any-JSON values: ``"auto"`` is exact (None) for an open schema (its
    whole language is any JSON of some types: the recursive any-JSON rule, exact, though ~1.5 ms
    to compile with its first mask against ~0.1 ms for the warm bounded automaton),
    `BOUNDED_NESTING_DEPTH` elsewhere (open values inside a constrained schema keep the schema one
    regular automaton) and `SHALLOW_NESTING_DEPTH` under an indent policy (the lowering also falls
    back to it where open values lie in a product)."""
    if max_nesting_depth != "auto":
        return max_nesting_depth  # type: ignore[return-value]
    if isinstance(whitespace, IndentSpec):
        return SHALLOW_NESTING_DEPTH
    return None if is_open_schema(schema) else BOUNDED_NESTING_DEPTH


@dataclass(frozen=True)
class JsonSchemaOptions:
    """Everything that changes the lowered language besides the schema itself.

    `max_nesting_depth` bounds the nesting of values whose schema allows *any* JSON (``{}``,
    ``true``, ``{"type": "object"}`` members...) to a fixed depth; None makes them exact (unbounded
    nesting through a recursive grammar rule, compiled by the context-free compiler).  The entry
    points take ``"auto"`` (their default) and resolve it with `resolve_nesting_depth`.
    """

    whitespace: WhitespaceOption = "default"
    max_whitespace: int = 4
    forbid_additional_properties: bool = False
    lenient: bool = False
    max_nesting_depth: int | None = BOUNDED_NESTING_DEPTH

    def __post_init__(self) -> None:
        if not (isinstance(self.whitespace, IndentSpec)
                or self.whitespace in ("default", "compact", "free")):
            raise GrammarError(f"unknown whitespace policy {self.whitespace!r}; use 'default', "
                               "'compact', 'free' or IndentSpec(n)")
        if not (0 <= self.max_whitespace <= 64):
            raise GrammarError(f"max_whitespace must be within 0..64, got {self.max_whitespace}")
        if self.max_nesting_depth is not None and (isinstance(self.max_nesting_depth, bool) or
                                                   not isinstance(self.max_nesting_depth, int) or
                                                   not 0 <= self.max_nesting_depth <= 8):
            raise GrammarError(f"max_nesting_depth must be None, 'auto' or within 0..8, got "
                               f"{self.max_nesting_depth!r}")


_WS_CHARS = ByteSet(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))


class Whitespace:
    """Separators and bracket padding for one policy; `depth` is the nesting of the container."""

    def __init__(self, options: JsonSchemaOptions):
        self.policy = options.whitespace
        self._free = repeat(_WS_CHARS, 0, options.max_whitespace) if options.max_whitespace else EMPTY
        self._commas: dict[int, Node] = {}  # built once per depth: separators recur in every member
        self._colon: Node | None = None

    def _newline(self, depth: int) -> Node:
        assert isinstance(self.policy, IndentSpec)
        return lit("\n" + " " * (self.policy.indent * depth))

    def open(self, depth: int) -> Node:
        """After ``{`` / ``[`` of a non-empty container at `depth` (0 = top level)."""
        if isinstance(self.policy, IndentSpec):
            return self._newline(depth + 1)
        return self._free if self.policy == "free" else EMPTY

    def close(self, depth: int) -> Node:
        """Before ``}`` / ``]`` of a non-empty container."""
        if isinstance(self.policy, IndentSpec):
            return self._newline(depth)
        return self._free if self.policy == "free" else EMPTY

    def comma(self, depth: int) -> Node:
        """Between two members of a container at `depth`."""
        node = self._commas.get(depth)
        if node is None:
            node = self._commas[depth] = self._comma(depth)
        return node

    def _comma(self, depth: int) -> Node:
        if isinstance(self.policy, IndentSpec):
            return seq(lit(","), self._newline(depth + 1))
        if self.policy == "free":
            return seq(self._free, lit(","), self._free)
        if self.policy == "default":
            return seq(lit(","), optional(lit(" ")))
        return lit(",")

    def colon(self) -> Node:
        """Between a member's key and its value."""
        if self._colon is None:
            self._colon = self._colon_node()
        return self._colon

    def _colon_node(self) -> Node:
        if isinstance(self.policy, IndentSpec):
            return lit(": ")
        if self.policy == "free":
            return seq(self._free, lit(":"), self._free)
        if self.policy == "default":
            return seq(lit(":"), optional(lit(" ")))
        return lit(":")
