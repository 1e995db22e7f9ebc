"""``{"type": ...}`` schemas the lowering adds to a conjunction to take one part of it by JSON type.

They live as long as the process: the lowering's memos key conjunctions by the identity of their
schemas, so one object stands for each list of types.
"""
from __future__ import annotations

SCALAR_TYPES = ("null", "boolean", "number", "string")
CONTAINER_TYPES = {"array": {"type": "array"}, "object": {"type": "object"}}
_RESTRICTIONS: dict[tuple[str, ...], dict] = {}


def restriction(types: tuple[str, ...]) -> dict:
    """The schema {"type": types}, one object per type list for the whole process."""
    got = _RESTRICTIONS.get(types)
    if got is None:
        got = _RESTRICTIONS[types] = {"type": list(types)}
    return got
