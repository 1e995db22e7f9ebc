"""Errors of the JSON Schema lowering: each names the keyword and the JSON pointer."""
from __future__ import annotations

from formwork.grammar.errors import GrammarError


class SchemaLoweringError(GrammarError):
    """A schema keyword cannot be turned into a grammar."""

    def __init__(self, keyword: str, pointer: str, reason: str):
        where = pointer or "#"
        super().__init__(f"{keyword} at {where}: {reason}")
        self.keyword = keyword
        self.pointer = pointer
        self.reason = reason


class UnsupportedSchemaError(SchemaLoweringError):
    """The keyword (or this use of it) is not enforced by formwork."""


class OneOfOverlapError(SchemaLoweringError):
    """`oneOf` branches may match the same instance, so exclusivity cannot be enforced."""


class InvalidSchemaError(SchemaLoweringError):
    """The schema could not be loaded (meta-schema, references, dialect)."""
