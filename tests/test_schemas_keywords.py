"""The keyword table (`formwork.schemas.keywords`) and the unsupported-keyword report."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas import (SUPPORTED_FORMATS, SUPPORTED_KEYWORDS, UNSUPPORTED_KEYWORDS,
                              KeywordKind, Severity, UnsupportedKeywordError, classify,
                              load_schema)
from formwork.schemas.keywords import (_BACKREFERENCE, ANNOTATION_KEYWORDS, DRAFT_07,
                                       DRAFT_2020_12, DRAFT_KEYWORDS, SUBSCHEMA_KEYWORDS, python_spelling,
                                       regex_problem)
from formwork.schemas.pointer import (InvalidPointerError, escape_token, join_pointer,
                                      split_pointer, unescape_token)

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import loaded_suite  # noqa: E402

# The supported set issue 3 asks the grammar compiler to enforce, verbatim.
ISSUE_3_SUPPORTED = {
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "minProperties", "maxProperties", "items", "prefixItems",
    "additionalItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "oneOf",
    "allOf", "$ref", "$defs", "definitions", "$id", "$anchor", "$schema",
}


#: Keywords issue 21 adds for arrays and objects.
ISSUE_21_ITEMS = {"contains", "minContains", "maxContains", "propertyNames", "dependentRequired",
                  "dependentSchemas", "$dynamicRef", "$dynamicAnchor", "uniqueItems"}


# ---- the table ---------------------------------------------------------------------------------

def test_the_supported_set_is_issue_3s():
    assert SUPPORTED_KEYWORDS - {"not", "if", "then", "else"} - ISSUE_21_ITEMS == ISSUE_3_SUPPORTED  # + issue 21's
    assert SUPPORTED_FORMATS == {"date-time", "date", "time", "duration", "email", "hostname",
                                 "ipv4", "ipv6", "uuid", "uri", "uri-reference",  # + issue 21's
                                 "json-pointer", "relative-json-pointer", "regex", "byte",
                                 "int32", "int64", "uint32", "uint64", "float", "double",
                                 "iri", "iri-reference", "uri-template", "idn-email",
                                 "idn-hostname"}


def test_supported_unsupported_and_annotations_are_disjoint():
    assert not SUPPORTED_KEYWORDS & set(UNSUPPORTED_KEYWORDS)
    assert not SUPPORTED_KEYWORDS & ANNOTATION_KEYWORDS
    assert not ANNOTATION_KEYWORDS & set(UNSUPPORTED_KEYWORDS)
    assert all(len(reason) > 30 for reason in UNSUPPORTED_KEYWORDS.values())


@pytest.mark.parametrize("draft, validator", [(DRAFT_2020_12, jsonschema.Draft202012Validator),
                                              (DRAFT_07, jsonschema.Draft7Validator)])
def test_every_validating_keyword_of_jsonschema_is_supported_or_unsupported(draft, validator):
    for keyword in validator.VALIDATORS:
        assert keyword in DRAFT_KEYWORDS[draft]
        assert keyword in SUPPORTED_KEYWORDS or keyword in UNSUPPORTED_KEYWORDS or keyword in (
            "then", "else"), keyword
    for keyword in DRAFT_KEYWORDS[draft]:
        classify(keyword, True, draft, {})  # every keyword has a verdict
    assert set(SUBSCHEMA_KEYWORDS[draft]) <= DRAFT_KEYWORDS[draft]


@pytest.mark.parametrize("keyword, value, siblings, draft, kind", [
    ("multipleOf", 3, {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("multipleOf", 2.0, {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("multipleOf", 0.5, {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("format", "uuid", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("format", "idn-email", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),  # a subset, with a reason
    ("pattern", "^[a-z]+$", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("pattern", "^(?!x)", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("pattern", r"(a)\1", {}, DRAFT_2020_12, KeywordKind.UNSUPPORTED),
    ("pattern", r"\p{L}", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("pattern", r"\cX", {}, DRAFT_2020_12, KeywordKind.UNSUPPORTED),
    ("patternProperties", {"^a": {}, "(?<=b)": {}}, {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("patternProperties", {"^a": {}, "(a)\\1": {}}, {}, DRAFT_2020_12, KeywordKind.UNSUPPORTED),
    ("uniqueItems", False, {}, DRAFT_2020_12, KeywordKind.IGNORED),
    ("uniqueItems", True, {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("uniqueItems", True, {"items": {"enum": [1, 2]}}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("uniqueItems", True, {"items": [{"type": "boolean"}], "additionalItems": False}, DRAFT_07,
     KeywordKind.SUPPORTED),
    ("uniqueItems", True, {"prefixItems": [{"const": 1}], "items": {"type": "integer"}},
     DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("if", {}, {"if": {}}, DRAFT_2020_12, KeywordKind.IGNORED),
    ("if", {}, {"if": {}, "then": {}}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("then", {}, {"if": {}, "then": {}}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("not", {}, {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("else", {}, {"else": {}}, DRAFT_2020_12, KeywordKind.IGNORED),
    ("minContains", 1, {}, DRAFT_2020_12, KeywordKind.IGNORED),
    ("minContains", 1, {"contains": {}}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("$dynamicRef", "#x", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),  # where static: the analysis decides
    ("$dynamicRef", "#x", {"$ref": "#"}, DRAFT_2020_12, KeywordKind.UNSUPPORTED),
    ("$dynamicAnchor", "x", {}, DRAFT_2020_12, KeywordKind.SUPPORTED),
    ("title", "T", {}, DRAFT_2020_12, KeywordKind.ANNOTATION),
    ("contentMediaType", "text/html", {}, DRAFT_07, KeywordKind.ANNOTATION),
    ("prefixItems", [], {}, DRAFT_07, KeywordKind.UNKNOWN),
    ("$defs", {}, {}, DRAFT_07, KeywordKind.UNKNOWN),
    ("additionalItems", {}, {}, DRAFT_2020_12, KeywordKind.UNKNOWN),
    ("dependencies", {}, {}, DRAFT_07, KeywordKind.SUPPORTED),
    ("dependencies", {}, {}, DRAFT_2020_12, KeywordKind.UNKNOWN),
    ("minLenght", 1, {}, DRAFT_2020_12, KeywordKind.UNKNOWN),
])
def test_classify(keyword, value, siblings, draft, kind):
    assert classify(keyword, value, draft, siblings).kind is kind


# ---- the report --------------------------------------------------------------------------------

def test_report_names_each_keyword_with_its_escaped_pointer():
    doc = load_schema({
        "type": "object",
        "properties": {
            "a/b": {"type": "string", "pattern": "(a)\\1"},
            "c~d": {"not": {"format": "idn-hostname"}},
            "e": {"type": "string", "format": "idn-email", "description": "annotations are fine"},
            "f": {"type": "number", "multipleOf": 0.01},
            "g": {"if": {"type": "string"}, "then": {"minLength": 1}},
        },
        "propertyNames": {"maxLength": 3},
        "x-vendor": 1,
    })
    report = [(p.pointer, p.keyword, p.severity.value) for p in doc.unsupported()]
    assert report == [  # each schema object's keywords, then its subschemas', depth first
        ("/x-vendor", "x-vendor", "warning"),
        ("/properties/a~1b/pattern", "pattern", "error"),
        ("/properties/c~0d/not/format", "format", "warning"),  # enforced as a subset
        ("/properties/e/format", "format", "warning"),
    ]
    assert "idn-email" in [p.reason for p in doc.unsupported() if p.keyword == "format"][1]


def test_only_reachable_definitions_are_reported_once_each():
    doc = load_schema({
        "$defs": {"unused": {"pattern": "(a)\\1"}, "tags": {"type": "string", "pattern": "(b)\\1"}},
        "properties": {"a": {"$ref": "#/$defs/tags"}, "b": {"$ref": "#/$defs/tags"}},
    })
    assert [(p.pointer, p.keyword) for p in doc.unsupported()] == [("/$defs/tags/pattern", "pattern")]
    assert [(p.pointer, p.keyword, p.severity) for p in doc.problems()] == [
        ("/$defs/tags/pattern", "pattern", Severity.ERROR),
        ("/$defs/unused/pattern", "pattern", Severity.INFO)]
    assert "no $ref reaches" in doc.problems()[1].reason


def test_registry_documents_are_reported_with_their_uri():
    doc = load_schema({"$ref": "https://example.com/s.json#/$defs/x"},
                      registry={"https://example.com/s.json": {"$defs": {"x": {"pattern": "(a)\\1"}}}})
    assert [p.pointer for p in doc.unsupported()] == ["https://example.com/s.json#/$defs/x/pattern"]


def test_draft07_siblings_of_ref_are_ignored_with_a_warning():
    doc = load_schema({"$schema": "http://json-schema.org/draft-07/schema#",
                       "definitions": {"s": {"type": "string"}},
                       "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 3,
                                            "description": "fine"}}})
    assert [(p.pointer, p.severity) for p in doc.unsupported()] == [
        ("/properties/a/maxLength", Severity.WARNING)]


def test_lenient_turns_errors_into_warnings_and_require_enforceable_raises():
    doc = load_schema({"properties": {"tags": {"pattern": "(a)\\1"}}})
    with pytest.raises(UnsupportedKeywordError, match="/properties/tags/pattern") as info:
        doc.require_enforceable()
    assert info.value.problems[0].keyword == "pattern"
    problems = doc.require_enforceable(lenient=True)
    assert [p.severity for p in problems] == [Severity.WARNING]
    assert load_schema({"type": "string"}).require_enforceable() == []


# ---- against the JSON Schema Test Suite --------------------------------------------------------

def _errors(draft):
    for name, _group, doc in loaded_suite(draft):
        if not isinstance(doc, Exception):
            yield name, {p.keyword for p in doc.problems() if p.severity is Severity.ERROR}


# files testing one supported keyword: no error may be reported for any of their groups
CLEAN_FILES = ["type.json", "properties.json", "required.json", "enum.json", "const.json",
               "allOf.json", "anyOf.json", "oneOf.json", "items.json", "maxItems.json",
               "minItems.json", "maxLength.json", "minLength.json", "maxProperties.json",
               "minProperties.json", "maximum.json", "minimum.json", "exclusiveMaximum.json",
               "exclusiveMinimum.json", "boolean_schema.json", "refRemote.json", "default.json",
               "infinite-loop-detection.json", "optional/format/date-time.json",
               "optional/format/uuid.json", "optional/format/ipv6.json", "optional/bignum.json"]
# files testing one unsupported keyword: every group reports it
UNSUPPORTED_FILES: dict[str, str] = {}


@pytest.mark.parametrize("draft, extra_clean, extra_unsupported", [
    (DRAFT_2020_12, ["prefixItems.json", "anchor.json", "dependentRequired.json",
                     "dependentSchemas.json"], {}),
    (DRAFT_07, ["additionalItems.json", "patternProperties.json", "dependencies.json"], {}),
])
def test_suite_files_of_supported_keywords_are_clean_and_unsupported_ones_reported(
        draft, extra_clean, extra_unsupported):
    expected_unsupported = {**UNSUPPORTED_FILES, **extra_unsupported}
    unique = {True: 0, False: 0}
    for name, errors in _errors(draft):
        if name in CLEAN_FILES + extra_clean:
            assert errors == set(), name
        if name in expected_unsupported:
            assert expected_unsupported[name] in errors, name
        if name == "uniqueItems.json":
            unique["uniqueItems" in errors] += 1
    # uniqueItems is supported whatever the items (the lowering refuses what it cannot track)
    assert unique == {True: 0, False: 6}


# ---- JSON pointers -----------------------------------------------------------------------------

@settings(deadline=None, max_examples=200)
@given(st.lists(st.text(alphabet=st.sampled_from("a~/01 %é"), max_size=5), max_size=5))
def test_pointer_escaping_round_trips(tokens):
    pointer = join_pointer(tokens)
    assert split_pointer(pointer) == tokens
    assert all(unescape_token(escape_token(t)) == t for t in tokens)
    assert pointer == "" or pointer.startswith("/")


@pytest.mark.parametrize("bad", ["a/b", "/a~2", "/~"])
def test_invalid_pointers_are_rejected(bad):
    with pytest.raises(InvalidPointerError):
        split_pointer(bad)


_KEYWORD_NAMES = st.one_of(st.sampled_from(sorted(DRAFT_KEYWORDS[DRAFT_2020_12] | DRAFT_KEYWORDS[DRAFT_07])),
                           st.sampled_from(["x-kubernetes-list-type", "tsType", "markdownDescription"]),
                           st.text(max_size=6))
_KEYWORD_VALUES = st.one_of(st.sampled_from(sorted(SUPPORTED_FORMATS) + ["int64", "color", "x"]),
                            st.none(), st.booleans(), st.integers(), st.lists(st.integers(), max_size=2))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_KEYWORD_NAMES, _KEYWORD_VALUES, st.sampled_from([DRAFT_2020_12, DRAFT_07]),
                          st.sampled_from([{}, {"if": True}, {"contains": True}, {"$ref": "#"}])),
                min_size=1, max_size=30),
       st.sampled_from([0, 3, 4096]))
def test_kept_verdicts_are_the_verdicts(occurrences: list, room: int) -> None:
    # classify keeps verdicts by keyword (and a format's by value, an unknown keyword's by name, in a
    # bounded table): asked in any order, twice, it answers as the uncached classification
    from formwork.schemas import keywords

    keywords._NAMED_VERDICTS.clear()
    old = keywords.MAX_NAMED_VERDICTS
    keywords.MAX_NAMED_VERDICTS = room
    try:
        for _ in range(2):
            for keyword, value, draft, siblings in occurrences:
                assert classify(keyword, value, draft, siblings) == \
                    keywords._classify(keyword, value, draft, siblings)
        assert len(keywords._NAMED_VERDICTS) <= room
    finally:
        keywords.MAX_NAMED_VERDICTS = old


def test_a_format_that_is_not_a_string_gets_a_verdict():
    """Found by the property above: `format: []` raised TypeError (a list is no dict key)."""
    for value in ([], [1], {"a": 1}, 3, None):
        verdict = classify("format", value, DRAFT_2020_12, {})
        assert verdict.kind is KeywordKind.IGNORED and "not a format name" in verdict.reason


def _compile_problem(pattern: str) -> str | None:
    """`regex_problem` as it was: Python's `re.compile` of the pattern in Python's spelling decides."""
    if _BACKREFERENCE.search(pattern):
        return ("backreferences are not regular; the pattern cannot be compiled to an automaton "
                "(lookarounds can)")
    try:
        re.compile(python_spelling(pattern))
    except re.error as error:
        return (f"not in the supported regex syntax (the ECMAScript/Python common subset; "
                f"e.g. \\cX and inline flags are not): {error}")
    return None


_REGEX_PIECES = ["a", "b", ".", "\\s", "\\S", "\\d", "[", "]", "^", "-", "(", ")", "?", "*", "+", "{2}", "{2,1}",
                 "{,3}", "|", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<n>", "(?P<n>", "\\", "\\1", "\\p{L}", "\\cX",
                 "(?i)", "$", "\\b", "x{1,2}", "[^:\\s]"]


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # `[[`: re warns, both ways
@given(st.lists(st.sampled_from(_REGEX_PIECES), max_size=8).map("".join))
@settings(max_examples=400, deadline=None)
def test_regex_problem_gives_re_compiles_verdict_and_message(pattern: str) -> None:
    """Parsing only where no lookbehind needs compiling finds every error `re.compile` raises,
    with its message (lookbehind widths: `a(?<=b+)`)."""
    assert regex_problem(pattern) == _compile_problem(pattern)


@pytest.mark.parametrize("pattern", ["a(?<=b+)", "(?<!ab|c)x", "(?<=a)b", "^[^:\\s]+:[^:\\s]+(:[^\\s]+)?$",
                                     ".+:.+(:.+)?", "[^\\\\]", "^\\.[A-z0-9-_.]*[A-z0-9-_]+$", "[a-"])
def test_regex_problem_on_lookbehinds_and_real_patterns(pattern: str) -> None:
    assert regex_problem(pattern) == _compile_problem(pattern)


@pytest.mark.parametrize("pattern, spelled", [
    ("^(?<year>[0-9]{4})-(?<m>[0-9]{2})$", "^(?P<year>[0-9]{4})-(?P<m>[0-9]{2})$"),
    ("(?<=a)b(?<!c)", "(?<=a)b(?<!c)"),  # lookbehinds stay
    ("\\(?<x>", "\\(?<x>"),  # an escaped parenthesis: no group
    ("\\\\(?<x>a)", "\\\\(?P<x>a)"),  # an escaped backslash, then a group
    ("\\p{L}(?<n>a)", "a(?P<n>a)"),
])
def test_python_spelling_of_ecmascript_syntax(pattern: str, spelled: str) -> None:
    assert python_spelling(pattern) == spelled


def test_ecmascript_named_groups_are_compiled() -> None:
    """`(?<name>...)` is ECMA-262 syntax (JSON Schema's regex dialect): a pattern holding it is not
    refused, and matches as the group without its name."""
    from formwork.grammar.json_schema import lower_json_schema
    from formwork.grammar.automaton import compile_dfa

    pattern = "^(?<year>[0-9]{4})-(?<month>0[1-9]|1[0-2])$"
    assert regex_problem(pattern) is None
    dfa = compile_dfa(lower_json_schema({"type": "string", "pattern": pattern}).node)
    assert dfa.accepts(b'"2024-05"') and dfa.accepts(b'"1999-12"')
    assert not dfa.accepts(b'"2024-13"') and not dfa.accepts(b'"24-05"')
