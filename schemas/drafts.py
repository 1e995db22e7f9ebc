"""The JSON Schema dialects formwork accepts (2020-12 and draft-07) and how `$schema` picks one."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jsonschema
import referencing.jsonschema
from referencing import Specification

from formwork.schemas.errors import UnknownDraftError
from formwork.schemas.keywords import DRAFT_07, DRAFT_2020_12


@dataclass(frozen=True)
class Draft:
    """A supported dialect: its name (the key into `keywords` tables), meta-schema validator
    class, `referencing` specification and canonical `$schema` URI."""

    name: str
    uri: str
    validator: type[Any]
    specification: Specification[Any]


DRAFT_2020_12_SPEC = Draft(DRAFT_2020_12, "https://json-schema.org/draft/2020-12/schema",
                           jsonschema.Draft202012Validator, referencing.jsonschema.DRAFT202012)
DRAFT_07_SPEC = Draft(DRAFT_07, "http://json-schema.org/draft-07/schema#",
                      jsonschema.Draft7Validator, referencing.jsonschema.DRAFT7)

_BY_NAME = {
    "2020-12": DRAFT_2020_12_SPEC, "draft2020-12": DRAFT_2020_12_SPEC,
    "draft-2020-12": DRAFT_2020_12_SPEC,
    "7": DRAFT_07_SPEC, "07": DRAFT_07_SPEC, "draft7": DRAFT_07_SPEC, "draft-07": DRAFT_07_SPEC,
    "draft-7": DRAFT_07_SPEC,
}

_KNOWN_UNSUPPORTED = ("draft-03", "draft-04", "draft-06", "2019-09")


def _uri_key(uri: str) -> str:
    """`$schema` URIs compare without scheme, trailing '#' or trailing '/'."""
    key = uri.strip().rstrip("#").rstrip("/")
    for prefix in ("https://", "http://"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


_BY_URI = {
    _uri_key(DRAFT_2020_12_SPEC.uri): DRAFT_2020_12_SPEC,
    _uri_key(DRAFT_07_SPEC.uri): DRAFT_07_SPEC,
}


def draft_named(name: str) -> Draft:
    """The draft for a user-facing name ("2020-12", "draft7", "draft-07", ...) or a `$schema` URI."""
    draft = _BY_NAME.get(name.strip().lower()) or _BY_URI.get(_uri_key(name))
    if draft is None:
        raise UnknownDraftError(f"unknown draft {name!r}; formwork supports 2020-12 and draft-07")
    return draft


def draft_of(schema: Any, default: Draft, *, pointer: str = "") -> Draft:
    """The draft a schema object declares with `$schema`, else `default`."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return default
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise UnknownDraftError(f"$schema must be a URI string, not {type(uri).__name__}",
                                pointer=pointer + "/$schema")
    draft = _BY_URI.get(_uri_key(uri))
    if draft is not None:
        return draft
    known = next((name for name in _KNOWN_UNSUPPORTED if name in uri), None)
    why = f"{known} is not supported" if known else "unknown dialect"
    raise UnknownDraftError(f"$schema {uri!r}: {why}; formwork supports 2020-12 "
                            f"({DRAFT_2020_12_SPEC.uri}) and draft-07 ({DRAFT_07_SPEC.uri})",
                            pointer=pointer + "/$schema")
