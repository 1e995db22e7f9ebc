"""The JSON Schema Test Suite (draft2020-12 and draft7, optional and optional/format included)
through compiled grammars: every schema either compiles or fails with a GrammarError; for compiled
schemas, invalid instances are rejected and valid ones accepted (via `accept_string` on compact
JSON, see `conftest_grammar_json` for the equivalent spellings tried).

Deliberate, documented deviations (valid instances rejected):
* `format` is asserted, also in 2020-12's main `format.json` whose tests say it is only an
  annotation by default;
* IDNA A-label host names (`xn--...`) are rejected: Punycode/IDNA rules are not checked;
* unconstrained values nest at most `max_nesting_depth` (2 here, as the "auto" default inside
  constrained schemas) containers deep: two instances of `uniqueItems=false validation` nest deeper.
And accepted invalid instances: none, except draft7's optional `content.json`, whose
contentMediaType/contentEncoding are annotations in formwork (as in 2020-12).
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import run_suite  # noqa: E402

NESTED_TOO_DEEP = {"unique array of nested objects is valid", "non-unique array of nested objects is valid"}
A_LABELS = "validation of A-label (punycode) host names"
ALLOWED_REJECTIONS = {
    # (draft, file, group) -> test descriptions (None: every valid test of the group)
    ("draft2020-12", "format.json", None): {"only an annotation by default"},
    ("draft2020-12", "optional/format/hostname.json", A_LABELS): None,
    ("draft7", "optional/format/hostname.json", A_LABELS): None,
    ("draft2020-12", "uniqueItems.json", "uniqueItems=false validation"): NESTED_TOO_DEEP,
    ("draft7", "uniqueItems.json", "uniqueItems=false validation"): NESTED_TOO_DEEP,
}
ANNOTATION_ONLY_FILES = {("draft7", "optional/content.json")}


@pytest.fixture(scope="module", params=["draft2020-12", "draft7"])
def suite(request):
    return request.param, run_suite(request.param)


def _allowed(draft: str, result, test: str) -> bool:
    for (d, file, group), tests in ALLOWED_REJECTIONS.items():
        if d == draft and file == result.file and group in (None, result.description):
            if tests is None or any(t in test for t in tests):
                return True
    return False


def test_no_invalid_instance_accepted(suite):
    draft, results = suite
    accepted = [(r.file, r.description, r.wrongly_accepted) for r in results
                if r.wrongly_accepted and (draft, r.file) not in ANNOTATION_ONLY_FILES]
    assert accepted == []


def test_valid_instances_accepted_outside_the_allow_list(suite):
    draft, results = suite
    rejected = [(r.file, r.description, t) for r in results for t in r.wrongly_rejected
                if not _allowed(draft, r, t)]
    assert rejected == []


def test_every_uncompiled_schema_has_a_reason(suite):
    _, results = suite
    for r in results:
        if not r.compiled:
            assert r.reason and ("Error" in r.reason.split(":")[0]), (r.file, r.description)


def test_most_groups_fully_right(suite):
    draft, results = suite
    main = [r for r in results if "/" not in r.file]
    right = sum(r.fully_right for r in main)
    if draft == "draft2020-12":
        assert len(main) == 383
        assert right >= 200, f"{right} of 383 draft2020-12 groups fully right"
    else:
        assert right >= 180, f"{right} of {len(main)} draft7 groups fully right"
