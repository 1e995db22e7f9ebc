"""The C program behind the compiled meta-schema predicates (`schemas/native/_meta_check.c`):
its type fast paths agree with jsonschema's type checkers, it declines what it cannot decide, and
it refuses malformed programs."""
from __future__ import annotations

import jsonschema
import pytest

from formwork.schemas import _meta_check as op
from formwork.schemas.drafts import DRAFT_04_SPEC, DRAFT_07_SPEC, DRAFT_2020_12_SPEC
from formwork.schemas.metaschema import _predicate

DRAFTS = [DRAFT_04_SPEC, DRAFT_07_SPEC, DRAFT_2020_12_SPEC]
NUMBERS = [0, 3, -1, 2.0, 2.5, True, False, 10**30, float(10**30), "2", None]


class Count(int):
    """An int subclass: left to the draft's type checker."""


@pytest.mark.parametrize("draft", DRAFTS, ids=lambda d: d.name)
@pytest.mark.parametrize("value", NUMBERS + [Count(2)], ids=repr)
def test_integer_keywords_agree_with_jsonschema(draft, value):
    official = draft.validator(draft.validator.META_SCHEMA)
    for keyword in ("minLength", "maxItems", "minProperties"):
        schema = {keyword: value}
        if _predicate(draft)(schema):
            assert official.is_valid(schema), schema
        elif type(value) in (int, float) and value >= 0 and float(value).is_integer() \
                and (draft is not DRAFT_04_SPEC or type(value) is int):
            pytest.fail(f"{schema} is valid but not taken by the fast path")


@pytest.mark.parametrize("value", NUMBERS, ids=repr)
def test_type_fast_paths_match_the_type_checker(value):
    for draft in DRAFTS:
        checker = draft.validator.TYPE_CHECKER
        program = op.Program([((op.TYPE, (op.T_INTEGER, op.T_NUMBER, op.T_OTHER),
                                ("integer", "number", "integer")),)], checker.is_type)
        integer = op.Program([((op.TYPE, (op.T_INTEGER,), ("integer",)),)], checker.is_type)
        number = op.Program([((op.TYPE, (op.T_NUMBER,), ("number",)),)], checker.is_type)
        assert integer(value) == checker.is_type(value, "integer")
        assert number(value) == checker.is_type(value, "number")
        assert program(value) == (checker.is_type(value, "integer") or checker.is_type(value, "number"))


def test_minimum_and_enum_and_unique_items():
    def is_type(x, name):
        return jsonschema.Draft202012Validator.TYPE_CHECKER.is_type(x, name)
    program = op.Program([((op.PROPERTIES, {"m": 1, "e": 2, "u": 3}, None),),
                          ((op.MINIMUM, 0, "number", True),),
                          ((op.ENUM, frozenset({"a", "b"})),),
                          ((op.UNIQUE_ITEMS,),)], is_type)
    assert program({"m": 1, "e": "a", "u": ["x", 1, None]})
    assert not program({"m": 0}) and program({"m": "0"})  # strict; other types pass
    assert not program({"e": "c"}) and not program({"e": 1})
    assert not program({"u": [1, 1.0]}) and not program({"u": [[1], [2]]})  # containers: not sure


def test_a_recursion_too_deep_is_not_sure():
    deep: dict = {}
    for _ in range(50_000):
        deep = {"items": deep}
    assert _predicate(DRAFT_2020_12_SPEC)({"items": {"items": {}}})
    assert _predicate(DRAFT_2020_12_SPEC)(deep) is False


def test_callback_errors_propagate():
    def broken(x, name):
        raise ZeroDivisionError
    with pytest.raises(ZeroDivisionError):
        op.Program([((op.TYPE, (op.T_OTHER,), ("decimal",)),)], broken)(1)


@pytest.mark.parametrize("nodes", [
    [],
    [((op.ITEMS, 1),)],
    [((op.PROPERTIES, {"a": 5}, None),)],
    [((op.TYPE, (99,), ("x",)),)],
    [((op.TYPE, (op.T_STRING,), ()),)],
    [((99,),)],
    [((op.MINIMUM, 0),)],
    [[(op.NEVER,)]],
    [((op.DEPENDENCIES, (("a", None, 7),)),)],
])
def test_malformed_programs_are_refused(nodes):
    with pytest.raises((ValueError, TypeError)):
        op.Program(nodes, lambda x, name: True)
