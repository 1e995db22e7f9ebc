"""THE list of JSON Schema keywords formwork knows, enforces, ignores, or rejects (and why).

The grammar compiler enforces exactly `SUPPORTED_KEYWORDS` (plus `format` values in
`SUPPORTED_FORMATS`); `ANNOTATION_KEYWORDS` are accepted and ignored; every keyword in
`UNSUPPORTED_KEYWORDS` is reported with its reason (an error, or a warning when lenient).
Keywords a draft does not define are ignored by JSON Schema itself and reported as warnings.

`classify(keyword, value, draft)` is the single decision point; it also covers value-dependent
cases (`format` values, regexes with backreferences, `uniqueItems: false`, ...).
"""
from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from typing import Any

DRAFT_2020_12 = "2020-12"
DRAFT_07 = "draft-07"

#: Keywords whose semantics the grammar compiler enforces exactly.
SUPPORTED_KEYWORDS = frozenset({
    # structure and references
    "$schema", "$id", "$anchor", "$ref", "$defs", "definitions", "$dynamicRef", "$dynamicAnchor",
    # any type
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "not", "if", "then", "else",
    # objects
    "properties", "required", "additionalProperties", "patternProperties",
    "minProperties", "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas",
    # arrays
    "items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
    "contains", "minContains", "maxContains",
    # strings
    "minLength", "maxLength", "pattern", "format",
    # numbers
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
})

#: `format` values the compiler enforces: string formats as regular languages, OpenAPI's number
#: formats (int32, int64, uint32, uint64 as integer ranges; float, double: any number).
SUPPORTED_FORMATS = frozenset({
    "date-time", "date", "time", "duration", "email", "hostname", "ipv4", "ipv6",
    "uuid", "uri", "uri-reference", "iri", "iri-reference", "uri-template", "json-pointer",
    "relative-json-pointer", "regex", "byte", "idn-email", "idn-hostname",
    "int32", "int64", "uint32", "uint64", "float", "double",
})

#: Supported formats enforced as a strict subset of their strings (sound, not complete), with
#: what is left out: a warning naming the pointer. Any format not in `SUPPORTED_FORMATS` is
#: unknown: an annotation, compiled with a warning.
SUBSET_FORMATS: dict[str, str] = {
    "idn-hostname": "A-labels ('xn--...') are rejected, and so are U-labels past 8 characters "
                    "or with marks, right-to-left or contextual characters, and names with a "
                    "U-label past 3 labels",
    "idn-email": "domains as for idn-hostname: A-labels ('xn--...') are rejected, and so are "
                 "U-labels past 8 characters or with marks, right-to-left or contextual "
                 "characters, and names with a U-label past 3 labels",
}

#: Keywords with no effect on which instances are valid: accepted and ignored.
ANNOTATION_KEYWORDS = frozenset({
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
    "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "$vocabulary",
})

#: Keywords formwork cannot enforce, with the reason reported to the user.
UNSUPPORTED_KEYWORDS: dict[str, str] = {
    "dependencies": "dependencies: not a keyword of this draft (dependentRequired and "
                    "dependentSchemas replace it), yet validators commonly honour it: refused "
                    "rather than silently ignored",
    "unevaluatedProperties": "unevaluatedProperties: not a keyword of this draft (2019-09 added "
                             "it), yet validators commonly honour it: refused rather than "
                             "silently ignored",
    "unevaluatedItems": "unevaluatedItems: not a keyword of this draft (2019-09 added it), yet "
                        "validators commonly honour it: refused rather than silently ignored",
    "$recursiveRef": "$recursiveRef: draft 2019-09 dynamic reference, not supported",
    "$recursiveAnchor": "$recursiveAnchor: draft 2019-09 dynamic reference, not supported",
}

#: Keywords each supported draft defines; anything else is an unknown (ignored) keyword.
DRAFT_KEYWORDS: dict[str, frozenset[str]] = {
    DRAFT_2020_12: frozenset({
        "$schema", "$id", "$anchor", "$dynamicAnchor", "$ref", "$dynamicRef", "$defs",
        "$vocabulary", "$comment", "definitions",
        "type", "enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
        "properties", "patternProperties", "additionalProperties", "propertyNames",
        "required", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
        "unevaluatedProperties", "prefixItems", "items", "contains", "minContains",
        "maxContains", "minItems", "maxItems", "uniqueItems", "unevaluatedItems",
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly",
        "contentMediaType", "contentEncoding", "contentSchema",
    }),
    DRAFT_07: frozenset({
        "$schema", "$id", "$ref", "$comment", "definitions",
        "type", "enum", "const", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
        "properties", "patternProperties", "additionalProperties", "propertyNames",
        "required", "minProperties", "maxProperties", "dependencies",
        "items", "additionalItems", "contains", "minItems", "maxItems", "uniqueItems",
        "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "title", "description", "default", "examples", "readOnly", "writeOnly",
        "contentMediaType", "contentEncoding",
    }),
}


class Shape(enum.Enum):
    """How a keyword holds subschemas."""

    SCHEMA = "schema"                      # a single subschema
    SCHEMA_LIST = "list"                   # a list of subschemas
    SCHEMA_MAP = "map"                     # an object whose values are subschemas
    SCHEMA_OR_LIST = "schema-or-list"      # draft-07 `items`
    MAP_OF_SCHEMA_OR_STRINGS = "deps"      # draft-07 `dependencies`


#: Keywords holding subschemas, per draft, with their shape.
SUBSCHEMA_KEYWORDS: dict[str, dict[str, Shape]] = {
    DRAFT_2020_12: {
        "$defs": Shape.SCHEMA_MAP, "definitions": Shape.SCHEMA_MAP,
        "allOf": Shape.SCHEMA_LIST, "anyOf": Shape.SCHEMA_LIST, "oneOf": Shape.SCHEMA_LIST,
        "not": Shape.SCHEMA, "if": Shape.SCHEMA, "then": Shape.SCHEMA, "else": Shape.SCHEMA,
        "properties": Shape.SCHEMA_MAP, "patternProperties": Shape.SCHEMA_MAP,
        "additionalProperties": Shape.SCHEMA, "propertyNames": Shape.SCHEMA,
        "dependentSchemas": Shape.SCHEMA_MAP, "unevaluatedProperties": Shape.SCHEMA,
        "prefixItems": Shape.SCHEMA_LIST, "items": Shape.SCHEMA, "contains": Shape.SCHEMA,
        "unevaluatedItems": Shape.SCHEMA,
    },
    DRAFT_07: {
        "definitions": Shape.SCHEMA_MAP,
        "allOf": Shape.SCHEMA_LIST, "anyOf": Shape.SCHEMA_LIST, "oneOf": Shape.SCHEMA_LIST,
        "not": Shape.SCHEMA, "if": Shape.SCHEMA, "then": Shape.SCHEMA, "else": Shape.SCHEMA,
        "properties": Shape.SCHEMA_MAP, "patternProperties": Shape.SCHEMA_MAP,
        "additionalProperties": Shape.SCHEMA, "propertyNames": Shape.SCHEMA,
        "dependencies": Shape.MAP_OF_SCHEMA_OR_STRINGS,
        "items": Shape.SCHEMA_OR_LIST, "additionalItems": Shape.SCHEMA,
        "contains": Shape.SCHEMA,
    },
}

#: Subschema keywords whose subschemas apply to a member of the instance (a property value,
#: an element, or a key), not to the instance itself. A `$ref` cycle passing through one of
#: these consumes input on every turn; a cycle through none of them never terminates.
INSTANCE_DESCENDING = frozenset({
    "properties", "patternProperties", "additionalProperties", "propertyNames",
    "unevaluatedProperties", "prefixItems", "items", "additionalItems", "contains",
    "unevaluatedItems",
})

#: Keywords holding definitions only reachable through `$ref`.
DEFINITION_CONTAINERS = frozenset({"$defs", "definitions"})

# A backreference (numbered, named, or Python's `(?P=name)`): beyond a regular language.
_BACKREFERENCE = re.compile(r"\\[1-9]|\\k<|\(\?P=")


class KeywordKind(enum.Enum):
    """What formwork does with a keyword."""

    SUPPORTED = "supported"        # enforced by the grammar compiler
    ANNOTATION = "annotation"      # no effect on validity; ignored
    IGNORED = "ignored"            # no effect in this position (e.g. `then` without `if`)
    UNSUPPORTED = "unsupported"    # would change validity, cannot be enforced
    UNKNOWN = "unknown"            # not a keyword of the draft; JSON Schema ignores it


@dataclass(frozen=True)
class Verdict:
    """The classification of one keyword occurrence, with a reason when not plainly supported."""

    kind: KeywordKind
    reason: str = ""


#: A Unicode property escape `\p{Name}`/`\P{Name}` (not after an escaping backslash).
_PROPERTY_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\[pP]\{[^{}\\]*\}")
#: An ECMAScript named group `(?<name>` (not a lookbehind `(?<=` / `(?<!`; not after an escaping
#: backslash), which Python's `re` spells `(?P<name>`.
_NAMED_GROUP = re.compile(r"(?<!\\)((?:\\\\)*)\(\?<(?![=!])")


def python_spelling(pattern: str) -> str:
    """`pattern` as Python's `re` reads the same syntax: `\\p{..}` (which formwork's compiler has and
    `re` lacks) as a plain character, and ECMAScript named groups in Python's spelling."""
    return _NAMED_GROUP.sub(r"\1(?P<", _PROPERTY_ESCAPE.sub(r"\1a", pattern))


@functools.lru_cache(maxsize=1024)
def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is not a regular expression formwork can compile, or None if it is (kept per
    pattern: schemas repeat theirs)."""
    if _BACKREFERENCE.search(pattern):
        return ("backreferences are not regular; the pattern cannot be compiled to an automaton "
                "(lookarounds can)")
    error = _python_regex_error(python_spelling(pattern))
    if error is not None:
        return (f"not in the supported regex syntax (the ECMAScript/Python common subset; "
                f"e.g. \\cX and inline flags are not): {error}")
    return None


#: Python's regex parser (`re.compile` is it and then code generation); None where `re` has none.
_PARSE = getattr(getattr(re, "_parser", None), "parse", None)


def _python_regex_error(pattern: str) -> re.error | None:
    """The error `re.compile(pattern)` raises, or None.  Parsing finds every error but those of
    lookbehinds, whose width is checked while compiling: a pattern without one is only parsed
    (a new pattern's first compile costs ~0.1 ms, about twice its parse)."""
    try:
        if _PARSE is None or "(?<" in pattern:
            re.compile(pattern)
        else:
            _PARSE(pattern)
    except re.error as error:
        return error
    return None


#: Keywords whose verdict depends on their value or siblings (the others' are kept per draft).
_VALUE_DEPENDENT = frozenset({"format", "multipleOf", "pattern", "patternProperties", "uniqueItems",
                              "if", "then", "else", "minContains", "maxContains", "$dynamicRef"})
_VERDICTS: dict[tuple[str, str], Verdict] = {}
#: Most verdicts kept for keywords no draft defines (by name: `x-kubernetes-list-type`) and for
#: `format` (by value): the names and values are the schemas' own, so the table is bounded.
MAX_NAMED_VERDICTS = 4096
_NAMED_VERDICTS: dict[tuple[str, str, Any], Verdict] = {}


def classify(keyword: str, value: Any, draft: str, siblings: dict[str, Any] | None = None) -> Verdict:
    """Classify `keyword: value` in a schema object of `draft` (`siblings` is that object)."""
    verdict = _VERDICTS.get((keyword, draft))
    if verdict is not None:
        return verdict
    known = keyword in DRAFT_KEYWORDS[draft]
    if known and (keyword != "format" or type(value) is not str):
        verdict = _classify(keyword, value, draft, siblings or {})
        if keyword not in _VALUE_DEPENDENT:
            _VERDICTS[(keyword, draft)] = verdict
        return verdict
    # an unknown keyword's verdict depends on its name alone, a format's on its value alone
    key = (keyword, draft, value if known else None)
    verdict = _NAMED_VERDICTS.get(key)
    if verdict is None:
        verdict = _classify(keyword, value, draft, siblings or {})
        if len(_NAMED_VERDICTS) < MAX_NAMED_VERDICTS:
            _NAMED_VERDICTS[key] = verdict
    return verdict


def _classify(keyword: str, value: Any, draft: str, siblings: dict[str, Any]) -> Verdict:
    if keyword not in DRAFT_KEYWORDS[draft]:
        return Verdict(KeywordKind.UNKNOWN, f"{keyword!r} is not a {draft} keyword; JSON Schema "
                                            "ignores it (a typo?)")
    if keyword in ANNOTATION_KEYWORDS:
        return Verdict(KeywordKind.ANNOTATION)
    if keyword == "format":
        if not isinstance(value, str):  # the meta-schema check refuses such a schema; say so if asked alone
            return Verdict(KeywordKind.IGNORED, f"format {value!r} is not a format name (a string)")
        if value in SUBSET_FORMATS:
            return Verdict(KeywordKind.SUPPORTED, f"format {value!r} is enforced as a subset: "
                                                  + SUBSET_FORMATS[value])
        if value in SUPPORTED_FORMATS:
            return Verdict(KeywordKind.SUPPORTED)
        return Verdict(KeywordKind.IGNORED, f"format {value!r} is unknown: an annotation, "
                                            "not enforced")
    if keyword == "pattern" and isinstance(value, str):
        reason = regex_problem(value)
        if reason:
            return Verdict(KeywordKind.UNSUPPORTED, f"pattern {value!r}: {reason}")
    if keyword == "patternProperties" and isinstance(value, dict):
        for key in value:
            reason = regex_problem(key)
            if reason:
                return Verdict(KeywordKind.UNSUPPORTED, f"patternProperties {key!r}: {reason}")
    if keyword == "$dynamicRef" and "$ref" in siblings:
        return Verdict(KeywordKind.UNSUPPORTED, "$dynamicRef beside $ref in one schema object is not "
                                                "supported (put one of them in an allOf)")
    if keyword == "uniqueItems" and value is False:
        return Verdict(KeywordKind.IGNORED)
    if keyword == "uniqueItems":  # finite domains: an automaton; else the matcher compares items
        return Verdict(KeywordKind.SUPPORTED)  # (the lowering refuses what it cannot track)
    if keyword in ("then", "else") and "if" not in siblings:
        return Verdict(KeywordKind.IGNORED, f"{keyword!r} without 'if' has no effect")
    if keyword == "if" and "then" not in siblings and "else" not in siblings:
        return Verdict(KeywordKind.IGNORED, "'if' without 'then' or 'else' has no effect")
    if keyword in ("minContains", "maxContains") and "contains" not in siblings:
        return Verdict(KeywordKind.IGNORED, f"{keyword!r} without 'contains' has no effect")
    if keyword in ("dependencies", "unevaluatedProperties", "unevaluatedItems"):
        return Verdict(KeywordKind.SUPPORTED)  # a keyword of this draft (see the first test)
    if keyword in UNSUPPORTED_KEYWORDS:
        return Verdict(KeywordKind.UNSUPPORTED, UNSUPPORTED_KEYWORDS[keyword])
    if keyword in SUPPORTED_KEYWORDS:
        return Verdict(KeywordKind.SUPPORTED)
    raise AssertionError(f"keyword {keyword!r} of {draft} is not classified")  # pragma: no cover


def _plain_keywords(draft: str) -> frozenset[str]:
    """The keywords of `draft` that are supported or annotations whatever their value and
    siblings: `classify` never reports them, nor calls their subschemas unsupported."""
    fixed = DRAFT_KEYWORDS[draft] - _VALUE_DEPENDENT
    return frozenset(keyword for keyword in fixed
                     if _classify(keyword, None, draft, {}).kind in (KeywordKind.SUPPORTED,
                                                                     KeywordKind.ANNOTATION))


#: Per draft, the keywords whose verdict is always "supported" or "annotation" (no problem to
#: report): a schema object made only of them needs no `classify` call.
PLAIN_KEYWORDS: dict[str, frozenset[str]] = {draft: _plain_keywords(draft) for draft in DRAFT_KEYWORDS}
