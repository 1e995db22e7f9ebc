"""Typed errors raised by the grammar compiler and matcher."""
from __future__ import annotations


class GrammarError(ValueError):
    """Base class: the constraint cannot be compiled or used as given."""


class UnsupportedRegexError(GrammarError):
    """The regular expression uses a feature outside the supported subset."""

    def __init__(self, message: str, pattern: str | None = None, position: int | None = None):
        where = ""
        if pattern is not None:
            where = f" in pattern {pattern!r}"
            if position is not None:
                where += f" at position {position}"
        super().__init__(message + where)
        self.pattern = pattern
        self.position = position


class RegexSyntaxError(GrammarError):
    """The regular expression is malformed."""

    def __init__(self, message: str, pattern: str, position: int):
        super().__init__(f"{message} in pattern {pattern!r} at position {position}")
        self.pattern = pattern
        self.position = position


class GrammarBudgetError(GrammarError):
    """Compiling or a matcher step exceeded its state, time or work budget."""


class EmptyLanguageError(GrammarError):
    """The constraint matches no string at all (e.g. a `false` schema, or a recursive rule with
    no base case): nothing could ever be generated."""


class RecursionNotSupportedError(GrammarError):
    """Rules refer to each other in a cycle; that needs the context-free compiler."""


class UndefinedRuleError(GrammarError):
    """A RuleRef names a rule the grammar does not define."""


class RollbackError(GrammarError):
    """rollback() asked for more steps than were accepted."""


class VocabularyError(GrammarError):
    """A tokenizer cannot be turned into a byte-level vocabulary."""
