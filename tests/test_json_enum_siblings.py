"""`const`/`enum` beside other keywords: the values kept are exactly those jsonschema accepts
(sibling constraints, annotations it ignores, conjunctions through `allOf`/`oneOf`), and checking
them is linear in the values (the owner's own `enum` is not asked again for each of its values)."""
import sys
from pathlib import Path

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import LEAVES, VALUES, assert_agrees  # noqa: E402

from formwork.grammar.json_schema import lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.lowering import Lowerer  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: keywords jsonschema ignores (annotations, vendor extensions) beside the values
IGNORED = st.sampled_from([{}, {"meta:enum": {"a": "the letter"}}, {"x-note": 1},
                           {"description": "d", "x-order": [1, 2]}])
OWNER_KEY = st.sampled_from(["enum", "const"])


def _owner(key: str, values: list) -> dict:
    return {"const": values[0]} if key == "const" else {"enum": values}


@SETTINGS
@given(OWNER_KEY, st.lists(VALUES, min_size=1, max_size=6), st.lists(LEAVES, max_size=2), IGNORED)
def test_values_beside_sibling_keywords_are_exact(key, values, siblings, ignored):
    schema = {**ignored, **_owner(key, values)}
    for s in siblings:
        if isinstance(s, dict):
            schema.update({k: v for k, v in s.items() if k not in schema})
    assert_agrees(schema)


@SETTINGS
@given(OWNER_KEY, st.lists(VALUES, min_size=1, max_size=6), LEAVES, IGNORED,
       st.sampled_from(["allOf", "oneOf"]))
def test_values_in_a_conjunction_are_exact(key, values, other, ignored, applicator):
    owner = {**ignored, **_owner(key, values)}
    assert_agrees({applicator: [owner, other]} if applicator == "allOf"
                  else {"oneOf": [owner, other], **ignored})


def test_a_large_enum_is_not_checked_against_itself(monkeypatch):
    """An enum of 3,000 names beside an annotation and `minLength`: jsonschema's `enum` keyword is
    never run (each value is one of the enum's by construction), one validator serves every value,
    and exactly the long-enough names are kept."""
    names = [f"n{i}" for i in range(3000)] + ["", "a"]
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string",
              "minLength": 2, "enum": names, "meta:enum": {"n1": "first"}}
    cls = jsonschema.Draft7Validator
    enum_runs: list[int] = []
    keyword = cls.VALIDATORS["enum"]

    def counted_enum(*args):
        enum_runs.append(1)
        return keyword(*args)

    monkeypatch.setitem(cls.VALIDATORS, "enum", counted_enum)
    built: list[int] = []
    make = Lowerer._validator

    def counted_validator(self, sub):
        built.append(1)
        return make(self, sub)

    monkeypatch.setattr(Lowerer, "_validator", counted_validator)
    lower_json_schema(schema)
    assert enum_runs == []
    assert len(built) == 1
    assert_agrees({k: v for k, v in schema.items() if k != "$schema"}, ["n1", "n2999", "a", "", "zz"],
                  draft="draft-07")
