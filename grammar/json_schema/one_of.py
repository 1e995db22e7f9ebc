"""``oneOf``: exactly one branch must match.

For each pair of branches we lower their conjunction (with the sibling keywords) at the schema
level, so that objects merge into one member order.  If it is empty the branches are disjoint and
``oneOf`` is a plain union; so are object branches of which one requires a member the other
forbids, known without lowering (their overlap may reach the rule being lowered, a `$ref` cycle).
Otherwise, when every shared value is a scalar (no object or array can match both), a branch keeps
only its values outside the other branch: its strings are intersected with the complement of the
overlap.  That is exact because both sides are restricted to canonical
scalar spellings (the overlap's lowering accepts the canonical spelling of each value it accepts),
unless a format whose language we over-constrain (hostname, email, time, date-time) is involved.
Where objects or arrays (or such a format) overlap, the branch is conjoined with ``not`` of the
other branch (`negation.py`: by type, and containers by their shape), taken over the scalars and
the container types the two branches share; where that complement cannot be built exactly it is
an error (lenient: a warning, and the union).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from formwork.grammar.ir import ByteSet, Node, Nothing, RuleRef, alt, children, lit, seq
from formwork.grammar.ir_chars import any_text
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema.automata import SHARED
from formwork.grammar.json_schema.errors import UnsupportedSchemaError
from formwork.grammar.json_schema.expand import Alternative, Sub
from formwork.grammar.json_schema.formats import INEXACT
from formwork.grammar.json_schema.ref_lowerings import Effects
from formwork.grammar.json_schema.strings import quoted, string_content
from formwork.grammar.json_schema.type_restrictions import (
    CONTAINER_TYPES, SCALAR_TYPES, restriction,
)
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

ALL_TYPES = frozenset({"null", "boolean", "object", "array", "string", "number", "integer"})

#: Top-level values spelled canonically: integral numbers without a fraction, no trailing zeros
#: or exponents, canonical strings; containers are left alone.
CANONICAL_SCALARS: Node = alt(
    lit("null"), lit("true"), lit("false"),
    regex(r"(?:0|-?[1-9][0-9]*|-?(?:0|[1-9][0-9]*)\.[0-9]*[1-9])"),
    quoted(string_content(canonical=True)),
    seq(ByteSet(((ord("["), ord("[")), (ord("{"), ord("{")))), any_text()),
)


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def possible_types(subs: Alternative) -> set[str]:
    """JSON types a value satisfying every subschema may have (structural over-approximation)."""
    types = set(ALL_TYPES)
    for s in subs:
        if s.schema is False:
            return set()
        if not isinstance(s.schema, dict):
            continue
        t = s.schema.get("type")
        if t is not None:
            allowed = {t} if isinstance(t, str) else set(t)
            if "number" in allowed:
                allowed.add("integer")
            types &= allowed
        for kw in ("const", "enum"):
            if kw in s.schema:
                values = [s.schema["const"]] if kw == "const" else s.schema["enum"]
                found = {_value_type(v) for v in values}
                if "number" in found:
                    found.add("integer")
                types &= found
    return types


def _inexact(subs: Alternative) -> bool:
    return any(isinstance(s.schema, dict) and s.schema.get("format") in INEXACT
               for s in subs)


def resolve_one_of(lw: "Lowerer", sub: Sub, branches: list[list[Alternative]]) -> list[Alternative]:
    """The alternatives of ``oneOf`` at `sub`, with exclusions added where branches overlap."""
    local = sub.local()
    out: list[Alternative] = []
    for i, branch in enumerate(branches):
        for a in branch:
            excluded: dict[int, list[Node]] = {}
            negated: dict[int, set[str]] = {}  # branch -> container types it shares with `a`
            for j, other in enumerate(branches):
                if j == i:
                    continue
                for b in other:
                    both = [local, *a, *b]
                    types = possible_types(both)
                    if not types:
                        continue  # no value has a type both allow (or one is `false`)
                    if types <= {"object"} and _forbidden_required(lw, both):
                        continue  # disjoint whatever their members' values (which may recurse)
                    overlap = lw.lower_alternative(both, 0)
                    if _empty(overlap):
                        continue
                    containers = types & {"object", "array"}
                    if containers or _inexact(both):
                        negated.setdefault(j, set()).update(
                            t for t in containers if not _empty(lw.lower_alternative(
                                [*both, Sub(CONTAINER_TYPES[t], None, sub.pointer)], 0)))
                    else:
                        excluded.setdefault(j, []).append(overlap)
            extra = [_negation(lw, sub, j, kinds) for j, kinds in negated.items()]
            scalar = [n for j, nodes in excluded.items() if j not in negated for n in nodes]
            if scalar:
                extra.append(Sub(True, sub.resolver, child(sub.pointer, "oneOf", i),
                                 exclude=(alt(*scalar),)))
            out.append([*a, *extra])
    return out


def _forbidden_required(lw: "Lowerer", subs: Alternative) -> bool:
    """Whether a member name one subschema requires is one another forbids (``properties`` false,
    or ``additionalProperties`` false with no ``properties`` or ``patternProperties`` for it): then
    no object satisfies them all."""
    required = {name for s in subs if isinstance(s.schema, dict)
                and isinstance(s.schema.get("required"), list)  # draft-03: a boolean
                for name in s.schema["required"] if isinstance(name, str)}
    return any(_forbids(lw, s, name) for s in subs if isinstance(s.schema, dict) for name in required)


def _forbids(lw: "Lowerer", sub: Sub, name: str) -> bool:
    properties = sub.schema.get("properties", {})
    if name in properties:
        return properties[name] is False
    if sub.schema.get("additionalProperties") is not False:
        return False
    pointer = child(sub.pointer, "patternProperties")
    try:
        return not any(lw.pattern_matches(p, pointer, name) for p in sub.schema.get("patternProperties", {}))
    except UnsupportedSchemaError:  # a regex outside the supported syntax: the lowering says so
        return False


def _empty(node: Node) -> bool:
    """Whether `node` matches nothing; one reaching a recursive rule (a `$ref` cycle, compiled
    only as a whole grammar) is taken to match something."""
    return isinstance(node, Nothing) or not _recursive(node) and SHARED.compile(node).is_empty()


def _recursive(node: Node) -> bool:
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, RuleRef):
            return True
        if id(n) not in seen:
            seen.add(id(n))
            stack.extend(children(n))
    return False


def _negation(lw: "Lowerer", sub: Sub, j: int, containers: set[str]) -> Sub:
    """``not`` of branch j, over scalars and the container types in `containers` only (a
    container type no value of both branches has needs no complement: it may have none)."""
    branch = lw.expander.child(sub, "oneOf", j)
    types = SCALAR_TYPES + tuple(sorted(containers))
    target = lw.expander.synthetic(("oneOf branch", id(branch.schema), types), branch,
                                   lambda: {"allOf": [branch, restriction(types)]})
    return lw.expander.negation(sub, target, "oneOf")


class _KeptOneOf(NamedTuple):
    """A `oneOf` resolved and what its resolution did to the lowerer's counters."""

    alternatives: list[tuple[Sub, ...]]
    read: tuple  # the subschema and branches its key names by id, kept alive with it
    effects: Effects


class OneOfResolutions:
    """One lowering's `resolve_one_of`, kept by what it reads (the subschema and each branch's
    subschemas, scopes, pointers and exclusions, kept alive with the entry so their ids stay theirs)
    when it depends on nothing else, its effects on the lowerer's counters recorded and replayed
    as the kept `$ref` lowerings' are (`RefLowerings.record` / `replay`).  A definition holding a
    `oneOf` that expansion inlines under many `$ref`s (biome's rule severities, 1,632 times) is
    resolved once."""

    def __init__(self) -> None:
        self._kept: dict[tuple, _KeptOneOf] = {}

    def resolve(self, lw: "Lowerer", sub: Sub, branches: list[list[Alternative]]) -> list[Alternative]:
        key = (_sub_key(sub), tuple([tuple([tuple(map(_sub_key, a)) for a in branch]) for branch in branches]))
        got = self._kept.get(key)
        if got is not None and lw.kept.replay(lw, got.effects):
            return [list(a) for a in got.alternatives]
        recording = lw.kept.record(lw)
        try:
            out = resolve_one_of(lw, sub, branches)
        finally:
            effects = lw.kept.recorded(lw, recording)
        if effects is not None:
            self._kept[key] = _KeptOneOf([tuple(a) for a in out], (sub, branches), effects)
        return out


def _sub_key(sub: Sub) -> tuple:
    """What a resolution reads of `sub` (its schema and scope by identity)."""
    return id(sub.schema), id(sub.resolver), sub.pointer, sub.exclude
