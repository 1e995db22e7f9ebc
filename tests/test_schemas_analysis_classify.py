"""`_Analyser._classify` skips the draft's plain keywords (`PLAIN_KEYWORDS`: supported or an
annotation whatever their value and siblings): its problems must be those of classifying every
keyword of the schema object, as it did before."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.schemas.analysis import _SEVERITY, _Analyser
from formwork.schemas.drafts import DRAFT_07_SPEC, DRAFT_2020_12_SPEC
from formwork.schemas.keywords import ANNOTATION_KEYWORDS, DEFINITION_CONTAINERS, DRAFT_KEYWORDS, classify
from formwork.schemas.pointer import child
from formwork.schemas.problems import Problem, Severity
from formwork.schemas.refs import Location, RefIndex

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import schema_like  # noqa: E402

DRAFTS = {"2020-12": DRAFT_2020_12_SPEC, "draft-07": DRAFT_07_SPEC}
KEYWORDS = sorted(set().union(*DRAFT_KEYWORDS.values())) + ["x-vendor", "nonsense"]
STRINGS = ["date-time", "uuid", "email", "hostname", "made-up", "^a+$", "(?<=a)b", "a", "#/$defs/a"]


def every_keyword_classified(schema: dict[str, Any], location: Location, draft_name: str) -> list[Problem]:
    """The problems of the loop without the plain-keyword skip (the reference)."""
    found: list[Problem] = []
    only_ref = draft_name == "draft-07" and "$ref" in schema
    for keyword, value in schema.items():
        if only_ref and keyword != "$ref" and keyword not in DEFINITION_CONTAINERS \
                and keyword not in ANNOTATION_KEYWORDS:
            found.append(Problem(child(location.pointer, keyword), keyword,
                                 "ignored: draft-07 ignores every keyword next to $ref", Severity.WARNING))
            continue
        verdict = classify(keyword, value, draft_name, schema)
        severity = _SEVERITY.get(verdict.kind)
        if severity is not None and verdict.reason:
            found.append(Problem(child(location.pointer, keyword), keyword, verdict.reason, severity))
    return found


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYWORDS), schema_like(STRINGS, KEYWORDS), max_size=8),
       st.sampled_from(sorted(DRAFTS)))
def test_classify_reports_what_classifying_every_keyword_does(schema: dict[str, Any], draft_name: str) -> None:
    draft = DRAFTS[draft_name]
    analyser = _Analyser(RefIndex({}, draft), {}, draft)
    location = Location("", "/$defs/a")
    analyser._classify(schema, location, draft)
    assert analyser.result.problems == every_keyword_classified(schema, location, draft_name)
