"""Alternatives that a discriminator member makes empty, dropped while expanding.

n conditionals on one member (``allOf: [{if: {properties: {kind: {const: "a"}}}, then: ...},
...]``) expand into 2**n alternatives, of which only n + 1 can hold an object: the others ask
``kind`` to equal two different strings, or to equal a string and differ from it.  For an
alternative that only objects satisfy (a ``type: "object"`` in it), this reads the string values
each member may take (``properties: {k: {const | enum}}``, and ``not`` of such a condition made
for ``if``), and the members that must be present (``required``), and tells whether some
required member is left without a value.  It only ever drops empty alternatives.
"""
from __future__ import annotations

from typing import Any, Optional

_CONDITION_KEYS = frozenset({"properties", "required"})


def consistent(alternative: list) -> bool:
    """False when no object satisfies `alternative` (a conjunction of `expand.Sub`s: this module
    sits below `expand`, so it reads them, and the `Sub`s synthetic schemas hold, by their
    `schema` attribute) and it accepts objects only."""
    for s in alternative:
        schema = s.schema
        if isinstance(schema, dict) and schema.get("type") in ("object", ["object"]):
            break  # objects only
    else:
        return True
    required: set[str] = set()
    allowed: dict[str, set[str]] = {}
    excluded: dict[str, set[str]] = {}
    for s in alternative:
        schema = s.schema
        if not isinstance(schema, dict):
            continue
        negated = _negated_condition(schema)
        if negated is not None:
            name, value, with_required = negated
            excluded.setdefault(name, set()).add(value)
            if not with_required:  # not (absent or equal): present and different
                required.add(name)
            continue
        required.update(r for r in schema.get("required", ()) if isinstance(r, str))
        for name, sub in (schema.get("properties") or {}).items():
            values = string_values(getattr(sub, "schema", sub))
            if values is not None:
                allowed[name] = allowed[name] & values if name in allowed else values
    for name in required:
        if name in allowed and not allowed[name] - excluded.get(name, set()):
            return False
    return True


def string_values(schema: Any) -> Optional[set[str]]:
    """The values a member schema allows when they are all strings (None: not known so)."""
    if schema is False:
        return set()
    if not isinstance(schema, dict):
        return None
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if values is None or not all(isinstance(v, str) for v in values):
        return None
    return set(values)


def _negated_condition(schema: dict) -> Optional[tuple[str, str, bool]]:
    """(member, value, whether `required` names it) when `schema` is ``not`` of the condition
    ``properties: {member: {const: value}}`` (made for ``if``), else None."""
    label = getattr(schema, "label", None)  # an `expand.Synthetic` made for `if`
    if label is None or label[0] != "if" or set(schema) != {"not"}:
        return None
    cond = getattr(schema["not"], "schema", None)
    if not isinstance(cond, dict) or not _CONDITION_KEYS.issuperset(cond):
        return None
    props = cond.get("properties")
    if not isinstance(props, dict) or len(props) != 1:
        return None
    (name, sub), = props.items()
    values = string_values(sub)
    if values is None or len(values) != 1 or not isinstance(sub, dict) or set(sub) - {"const", "enum"}:
        return None
    required = cond.get("required", [])
    if set(required) - {name}:
        return None
    return name, next(iter(values)), name in required
