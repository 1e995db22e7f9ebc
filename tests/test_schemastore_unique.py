"""SchemaStore schemas whose uniqueItems ambiguity check used to expand the whole tagged automaton
past the DFA budget (issue 21) compile under the default budget and keep their arrays' items
distinct (vendored in `data/schemastore/`, see its SOURCE.md): citation-file-format.json (draft-07)
and compose-spec.json (2020-12), whose string and open-value lexemes are spliced in thousands of
places."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import VALIDATORS, assert_exact  # noqa: E402

DATA = Path(__file__).parent / "data" / "schemastore"

CFF = {"cff-version": "1.2.0", "message": "Cite it", "title": "T"}
DOE, ROE = {"family-names": "Doe", "given-names": "J"}, {"family-names": "Roe"}
CASES: dict[str, tuple[str, list[Any], list[Any]]] = {  # file -> (draft, valid, invalid) instances
    "citation-file-format.json": (
        "draft-07",
        [{**CFF, "authors": [DOE, ROE]},
         {**CFF, "authors": [DOE], "keywords": ["a", "b"]},
         {**CFF, "authors": [{"name": "ACME"}, DOE]}],
        [{**CFF, "authors": [DOE, DOE]},  # distinct authors
         {**CFF, "authors": [DOE], "keywords": ["a", "a"]},  # distinct keywords
         {**CFF, "authors": [ROE, {"family-names": "Roe"}]},
         {**CFF, "authors": []}]),
    "compose-spec.json": (
        "2020-12",
        [{"services": {"web": {"image": "nginx", "cap_add": ["NET_ADMIN", "SYS_ADMIN"]}}},
         {"services": {"web": {"image": "nginx", "environment": ["A=1", "B=2"]}}},
         {"services": {"web": {"environment": {"A": "1", "B": 2}}}}],
        [{"services": {"web": {"image": "nginx", "cap_add": ["NET_ADMIN", "NET_ADMIN"]}}},
         {"services": {"web": {"image": "nginx", "environment": ["A=1", "A=1"]}}},
         {"services": {"web": {"image": 5}}}]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schema_compiles_and_keeps_unique_items_distinct(name: str):
    schema = json.loads((DATA / name).read_text())
    draft, valid, invalid = CASES[name]
    cls = VALIDATORS[draft]
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    assert [validator.is_valid(x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
    assert_exact(schema, valid + invalid, draft=draft)
