"""The JSON Schema dialects formwork accepts and how `$schema` picks one.

Draft 2020-12 and draft-07 are compiled as they are. Draft-04, draft-06 and 2019-09 are checked
against their own meta-schemas, then translated into the newer draft of the same family (draft-07,
resp. 2020-12; see `formwork.schemas.dialects`), which the rest of formwork compiles. A `$schema`
URI formwork does not know (a custom meta-schema such as Iglu's self-describing one) is compiled as
the closest draft its keywords imply, with a warning.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
import referencing.jsonschema
from referencing import Specification

from formwork.schemas.errors import UnknownDraftError
from formwork.schemas.keywords import DRAFT_07, DRAFT_2020_12

#: The dialects translated before analysis (the keyword tables of `keywords` cover only the two
#: compiled ones; `dialects.SOURCE_LAYOUTS` has theirs).
DRAFT_2019_09 = "2019-09"
DRAFT_06 = "draft-06"
DRAFT_04 = "draft-04"


@dataclass(frozen=True)
class Draft:
    """A supported dialect: its name (the key into `keywords` tables), meta-schema validator
    class, `referencing` specification and canonical `$schema` URI; `translated_to` is the draft
    a schema of this dialect is translated into before analysis (None: compiled as it is)."""

    name: str
    uri: str
    validator: type[Any]
    specification: Specification[Any]
    translated_to: "Draft | None" = None

    @property
    def target(self) -> "Draft":
        """The draft a schema of this dialect is analysed and compiled as."""
        return self.translated_to or self


DRAFT_2020_12_SPEC = Draft(DRAFT_2020_12, "https://json-schema.org/draft/2020-12/schema",
                           jsonschema.Draft202012Validator, referencing.jsonschema.DRAFT202012)
DRAFT_07_SPEC = Draft(DRAFT_07, "http://json-schema.org/draft-07/schema#",
                      jsonschema.Draft7Validator, referencing.jsonschema.DRAFT7)

DRAFT_2019_09_SPEC = Draft(DRAFT_2019_09, "https://json-schema.org/draft/2019-09/schema",
                           jsonschema.Draft201909Validator, referencing.jsonschema.DRAFT201909,
                           DRAFT_2020_12_SPEC)
DRAFT_06_SPEC = Draft(DRAFT_06, "http://json-schema.org/draft-06/schema#",
                      jsonschema.Draft6Validator, referencing.jsonschema.DRAFT6, DRAFT_07_SPEC)
DRAFT_04_SPEC = Draft(DRAFT_04, "http://json-schema.org/draft-04/schema#",
                      jsonschema.Draft4Validator, referencing.jsonschema.DRAFT4, DRAFT_07_SPEC)

#: Every dialect, oldest first.
ALL_DRAFTS = (DRAFT_04_SPEC, DRAFT_06_SPEC, DRAFT_07_SPEC, DRAFT_2019_09_SPEC, DRAFT_2020_12_SPEC)

_BY_NAME = {
    "2020-12": DRAFT_2020_12_SPEC, "draft2020-12": DRAFT_2020_12_SPEC,
    "draft-2020-12": DRAFT_2020_12_SPEC,
    "2019-09": DRAFT_2019_09_SPEC, "draft2019-09": DRAFT_2019_09_SPEC,
    "draft-2019-09": DRAFT_2019_09_SPEC,
    "7": DRAFT_07_SPEC, "07": DRAFT_07_SPEC, "draft7": DRAFT_07_SPEC, "draft-07": DRAFT_07_SPEC,
    "draft-7": DRAFT_07_SPEC,
    "6": DRAFT_06_SPEC, "06": DRAFT_06_SPEC, "draft6": DRAFT_06_SPEC, "draft-06": DRAFT_06_SPEC,
    "draft-6": DRAFT_06_SPEC,
    "4": DRAFT_04_SPEC, "04": DRAFT_04_SPEC, "draft4": DRAFT_04_SPEC, "draft-04": DRAFT_04_SPEC,
    "draft-4": DRAFT_04_SPEC,
}
#: The user-facing draft names, for command-line choices.
DRAFT_NAMES = tuple(draft.name for draft in ALL_DRAFTS)

_KNOWN_UNSUPPORTED = ("draft-03", "draft-02", "draft-01")


@lru_cache(maxsize=1024)
def _uri_key(uri: str) -> str:
    """`$schema` URIs compare without scheme, trailing '#' or trailing '/' (kept per URI: schemas
    repeat a few)."""
    key = uri.strip().rstrip("#").rstrip("/")
    for prefix in ("https://", "http://"):
        if key.startswith(prefix):
            key = key[len(prefix):]
    return key


_BY_URI = {_uri_key(draft.uri): draft for draft in ALL_DRAFTS}
_SUPPORTED = "formwork supports draft-04, draft-06, draft-07, 2019-09 and 2020-12"


def draft_named(name: str) -> Draft:
    """The draft for a user-facing name ("2020-12", "draft7", "draft-07", ...) or a `$schema` URI."""
    draft = _BY_NAME.get(name.strip().lower()) or _BY_URI.get(_uri_key(name))
    if draft is None:
        raise UnknownDraftError(f"unknown draft {name!r}; {_SUPPORTED}")
    return draft


def known_draft(uri: str) -> Draft | None:
    """The draft a `$schema` URI names, or None for a URI formwork does not know."""
    return _BY_URI.get(_uri_key(uri))


def draft_of(schema: Any, default: Draft, *, pointer: str = "") -> Draft:
    """The draft a schema object declares with `$schema`, else `default`; an unknown URI is an
    error here (`dialects.declared_draft` infers a draft for it instead)."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return default
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise UnknownDraftError(f"$schema must be a URI string, not {type(uri).__name__}",
                                pointer=pointer + "/$schema")
    draft = _BY_URI.get(_uri_key(uri))
    if draft is not None:
        return draft
    raise UnknownDraftError(f"$schema {uri!r}: {unsupported_reason(uri)}; {_SUPPORTED}",
                            pointer=pointer + "/$schema")


def unsupported_reason(uri: str) -> str:
    """Why a `$schema` URI is not a supported dialect."""
    known = next((name for name in _KNOWN_UNSUPPORTED if name in uri), None)
    return f"{known} is not supported" if known else "unknown dialect"


def is_obsolete(uri: str) -> bool:
    """Whether `$schema` names a draft older than draft-04 (refused, never inferred)."""
    return any(name in uri for name in _KNOWN_UNSUPPORTED)
