"""Checking a schema against its draft's meta-schema with jsonschema."""
from __future__ import annotations

import reprlib
from functools import lru_cache
from typing import Any

from jsonschema import FormatChecker
from jsonschema.exceptions import ValidationError

from formwork.schemas.dialects import SOURCE_LAYOUTS
from formwork.schemas.drafts import DRAFT_04, DRAFT_06, Draft
from formwork.schemas.errors import MetaSchemaError
from formwork.schemas.fast_metaschema import inlined_2020_12_metaschema
from formwork.schemas.keywords import DRAFT_07, DRAFT_2020_12, SUBSCHEMA_KEYWORDS, Shape
from formwork.schemas.meta_predicate import Predicate, UnsupportedMetaSchemaError, compile_meta_schema
from formwork.schemas.pointer import join_pointer
from formwork.schemas.problems import Problem, Severity

_MAX_PROBLEMS = 50
_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = 4
_short.maxdict = 4
_short.maxlevel = 2


def _format_checker(draft: Draft) -> FormatChecker:
    """Formats checked in schemas: all but "regex" (patterns are ECMA-262, which Python's `re`
    does not fully accept; `keywords.classify` reports those formwork cannot handle)."""
    return FormatChecker([name for name in draft.validator.FORMAT_CHECKER.checkers
                          if name != "regex"])


@lru_cache(maxsize=None)
def _meta_validator(draft: Draft) -> Any:
    """The official meta-schema's validator (used to report errors)."""
    return draft.validator(draft.validator.META_SCHEMA, format_checker=_format_checker(draft))


@lru_cache(maxsize=None)
def _fast_validator(draft: Draft) -> Any:
    """An equivalent, faster validator deciding validity (see `fast_metaschema`)."""
    if draft.name != DRAFT_2020_12:
        return _meta_validator(draft)
    return draft.validator(inlined_2020_12_metaschema(), format_checker=_format_checker(draft))


@lru_cache(maxsize=None)
def _predicate(draft: Draft) -> Predicate | None:
    """The meta-schema compiled to a certainly-valid predicate (see `meta_predicate`), if it can be."""
    if draft.name not in (DRAFT_2020_12, DRAFT_07, DRAFT_06, DRAFT_04):
        return None  # 2019-09 ($recursiveRef) is checked by jsonschema alone
    meta = inlined_2020_12_metaschema() if draft.name == DRAFT_2020_12 else draft.validator.META_SCHEMA
    try:
        return compile_meta_schema(meta, draft.validator, _format_checker(draft),
                                   draft07=draft.name != DRAFT_2020_12)  # $ref siblings ignored
    except UnsupportedMetaSchemaError:
        return None


def is_valid_schema(schema: Any, draft: Draft) -> bool:
    """Whether `schema` validates against `draft`'s meta-schema: the compiled predicate decides the
    usual valid case, jsonschema the rest."""
    predicate = _predicate(draft)
    if predicate is not None and predicate(schema):
        return True
    return _fast_validator(draft).is_valid(schema)


def _leaf(error: ValidationError) -> ValidationError:
    """The most specific error below `error` (through anyOf/oneOf): the deepest one, preferring
    a failed constraint over a mere type mismatch with another branch."""
    while error.context:
        error = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
    return error


def _message(error: ValidationError) -> str:
    """A readable one-line reason, without huge instance reprs."""
    instance = _short.repr(error.instance)
    validator, expected = error.validator, error.validator_value
    if validator == "type":
        names = expected if isinstance(expected, list) else [expected]
        return f"{instance} is not of type {' or '.join(repr(name) for name in names)}"
    if validator == "enum":
        return f"{instance} is not one of {_short.repr(expected)}"
    if validator == "format":
        return f"{instance} is not a valid {expected!r}"
    message = error.message
    return message if len(message) <= 200 else message[:197] + "..."


def _keyword_at(path: list[Any], draft: Draft) -> str:
    """The schema keyword an error path ends in (skipping property names and indices)."""
    layout = SUBSCHEMA_KEYWORDS.get(draft.name) or SOURCE_LAYOUTS[draft.name]
    keyword, expect = "", "keyword"
    for token in path:
        if expect == "member" or (expect == "member-or-keyword" and isinstance(token, int)):
            expect = "keyword"
            continue
        if expect == "value":
            break
        keyword = str(token)
        shape = layout.get(keyword)
        if shape is None:
            expect = "value"
        elif shape is Shape.SCHEMA:
            expect = "keyword"
        elif shape is Shape.SCHEMA_OR_LIST:
            expect = "member-or-keyword"
        else:
            expect = "member"
    return keyword


def meta_schema_problems(schema: Any, draft: Draft, *, base: str = "") -> list[Problem]:
    """Every way `schema` fails `draft`'s meta-schema, as problems with JSON pointers (prefixed
    by `base`), deduplicated, at most 50."""
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    errors = sorted(_meta_validator(draft).iter_errors(schema),
                    key=lambda e: [str(p) for p in e.absolute_path])
    for error in map(_leaf, errors):
        pointer = base + join_pointer(error.absolute_path)
        keyword = _keyword_at(list(error.absolute_path), draft)
        reason = _message(error)
        if (pointer, reason) in seen:
            continue
        seen.add((pointer, reason))
        problems.append(Problem(pointer, keyword, reason, Severity.ERROR))
        if len(problems) >= _MAX_PROBLEMS:
            break
    return problems


def check_meta_schema(schema: Any, draft: Draft, *, base: str = "") -> None:
    """Raise `MetaSchemaError` listing each problem unless `schema` is valid for `draft`."""
    if is_valid_schema(schema, draft):
        return
    problems = meta_schema_problems(schema, draft, base=base)
    if not problems:  # pragma: no cover - the two meta-schemas are tested to agree
        raise AssertionError("fast and official meta-schema checks disagree")
    raise MetaSchemaError(problems)
