"""Typed errors of the JSON Schema front end; messages name the JSON pointer concerned."""
from __future__ import annotations

from collections.abc import Sequence

from formwork.schemas.pointer import display
from formwork.schemas.problems import Problem


def _shorten(pointer: str, limit: int = 120) -> str:
    return pointer if len(pointer) <= limit else pointer[:limit - 3] + "..."


class SchemaError(Exception):
    """Base class: a schema could not be loaded, checked or resolved."""

    def __init__(self, message: str, *, pointer: str | None = None,
                 problems: Sequence[Problem] = ()) -> None:
        self.pointer = pointer
        self.problems = list(problems)
        self.reason = message
        where = f"at {_shorten(display(pointer))}: " if pointer is not None else ""
        super().__init__(where + message)


class SchemaFileError(SchemaError):
    """The schema file cannot be read (missing, a directory, permissions...)."""


class InvalidJSONError(SchemaError):
    """The source is not JSON text (or not UTF-8 text at all)."""


class SchemaTooLargeError(SchemaError):
    """The source is larger than the size limit."""


class SchemaTooDeepError(SchemaTooLargeError):
    """The schema nests deeper than the depth limit."""


class UnknownDraftError(SchemaError):
    """`$schema` names a dialect formwork does not support (only 2020-12 and draft-07)."""


class MetaSchemaError(SchemaError):
    """The schema does not validate against its draft's meta-schema; `problems` lists each."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"not a valid schema: {first.reason}{more}", pointer=first.pointer,
                         problems=problems)


class UnresolvableRefError(SchemaError):
    """A `$ref` points nowhere: unknown document (never fetched), anchor or pointer."""


class DynamicRefError(SchemaError):
    """A `$dynamicRef` whose target depends on the path validation takes to reach it."""


class UnsupportedKeywordError(SchemaError):
    """The schema uses keywords formwork cannot enforce; `problems` lists each with its reason."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(f"cannot enforce {first.keyword!r}: {first.reason}{more}",
                         pointer=first.pointer, problems=problems)


class RefCycleError(SchemaError):
    """A `$ref` cycle never descends into the instance: validating it would never terminate."""
