"""`dialects.translate` copies the keywords no rule rewrites without asking `_Translator._keyword`
(`_REWRITTEN`): the translation is the one asking it for every keyword gives, for random
schema-like values of each translated draft (draft-04's `"": true` quirk included)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from formwork.schemas import dialects
from formwork.schemas.drafts import DRAFT_04_SPEC, DRAFT_06_SPEC, DRAFT_2019_09_SPEC
from formwork.schemas.keywords import DRAFT_KEYWORDS

sys.path.insert(0, str(Path(__file__).parent))
from conftest_schemas import schema_like  # noqa: E402


class _Everything:
    """Holds every keyword: each goes to `_keyword`."""

    def __contains__(self, keyword: object) -> bool:
        return True


values = schema_like(["", "#", "#/items/0", "#/definitions/a", "x.json",
                      "http://json-schema.org/draft-07/schema#"],
                     sorted(DRAFT_KEYWORDS["2020-12"] | DRAFT_KEYWORDS["draft-07"]
                            | {"id", "definitions", "dependencies", "additionalItems", "$recursiveRef",
                               "$recursiveAnchor", "", "a"}))


def _translated(schema, draft):
    try:
        got, problems = dialects.translate(schema, draft)
    except Exception as error:  # noqa: BLE001 - a refusal is part of the answer compared
        return type(error).__name__
    return repr(got), [repr(p) for p in problems]


@settings(max_examples=400, deadline=None)
@given(values)
@pytest.mark.parametrize("draft", [DRAFT_04_SPEC, DRAFT_06_SPEC, DRAFT_2019_09_SPEC], ids=lambda d: d.name)
def test_kept_keywords_translate_as_asking_for_each(draft, schema):
    fast = _translated(schema, draft)
    saved = dialects._REWRITTEN
    dialects._REWRITTEN = {name: _Everything() for name in saved}
    try:
        slow = _translated(schema, draft)
    finally:
        dialects._REWRITTEN = saved
    assert fast == slow


def test_the_empty_key_quirk_of_draft_04_is_kept():
    """`_keyword` drops a draft-04 keyword it does not rewrite when the object holds `"": true`
    (it reads the bound a keyword qualifies as `node.get("")`); kept as it was."""
    schema = {"": True, "minimum": 1, "type": "string", "id": "x"}
    assert dialects.translate(schema, DRAFT_04_SPEC)[0] == {"minimum": 1, "$id": "x"}
