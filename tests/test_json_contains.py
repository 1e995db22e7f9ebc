"""`contains`/`minContains`/`maxContains` with other item constraints: the matcher agrees with
jsonschema on random schemas and arrays over a small value domain; each refusal's message."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402

from formwork.grammar import GrammarBudgetError  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, lower_json_schema  # noqa: E402

SCALARS = st.one_of(st.integers(-2, 6), st.sampled_from(["", "a", "ab", "b", "ba"]),
                    st.booleans(), st.none())
ELEMENTS = st.one_of(SCALARS, st.lists(st.integers(0, 3), max_size=2),
                     st.sampled_from([{}, {"a": 1}]))
ARRAYS = st.lists(ELEMENTS, max_size=6)

CONTAINS = st.one_of(
    st.builds(lambda v: {"const": v}, SCALARS),
    st.builds(lambda vs: {"enum": vs}, st.lists(SCALARS, min_size=1, max_size=3)),
    st.sampled_from([{"type": "integer"}, {"type": "string"}, {"type": ["array", "null"]},
                     {"type": "object"}, {"type": "boolean"}, True, False,
                     {"type": "string", "pattern": "^a"}, {"type": "string", "maxLength": 1},
                     {"multipleOf": 2}, {"anyOf": [{"const": 1}, {"type": "string"}]},
                     {"oneOf": [{"type": "integer", "minimum": 2}, {"maximum": 4, "type": "integer"}]},
                     {"type": "string", "not": {"const": "a"}}, {"type": "array", "maxItems": 1},
                     {"type": "object", "required": ["a"]}, {"items": {"type": "integer"}}]),
    st.builds(lambda k: {"minimum": k}, st.integers(-1, 5)),
    st.builds(lambda k: {"type": "integer", "exclusiveMaximum": k}, st.integers(-1, 5)),
)
ITEMS = st.sampled_from([{"type": "integer"}, {"type": ["integer", "string"]},
                         {"enum": [1, 2, "a", None]}, {"maximum": 3}, {"type": "array"}, {}])
BOUND = st.one_of(st.none(), st.integers(0, 3))


@st.composite
def contains_schemas(draw, counted: bool = True):
    schema = {"contains": draw(CONTAINS)}
    if draw(st.booleans()):
        schema["items"] = draw(ITEMS)
    if draw(st.booleans()):
        key = "prefixItems" if counted else "items"
        schema[key] = draw(st.lists(ITEMS, min_size=1, max_size=2))
    for key in (("minContains", "maxContains") if counted else ()) + ("minItems", "maxItems"):
        bound = draw(BOUND)
        if bound is not None:
            schema[key] = bound
    if draw(st.integers(0, 4)) == 0:
        other = {"contains": draw(CONTAINS)}
        if counted:
            other["maxContains"] = draw(st.integers(0, 2))
        schema = {"allOf": [schema, other]}
    return schema


_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(contains_schemas(), st.lists(ARRAYS, min_size=8, max_size=8))
def test_contains_is_exact(schema, instances):
    assert_exact(schema, instances + ["x", 3])


@_SETTINGS
@given(contains_schemas(counted=False), st.lists(ARRAYS, min_size=8, max_size=8))
def test_draft07_contains_is_exact(schema, instances):
    assert_exact(schema, instances, draft="draft-07")


def test_counting_examples():
    schema = {"type": "array", "contains": {"const": 3}, "minContains": 2, "maxContains": 3,
              "items": {"type": "integer", "maximum": 5}}
    assert_exact(schema, [[], [3], [3, 3], [1, 3, 2, 3], [3, 3, 3, 3], [3, 6, 3], [1, 3, 3, 4, 3, 2]])


def test_long_length_bounds_are_counted_with_the_matches():
    schema = {"contains": {"const": 1}, "maxContains": 1, "maxItems": 100, "minItems": 70,
              "items": {"type": "integer"}}
    assert_exact(schema, [[0] * 69 + [1], [0] * 70 + [1], [1] + [0] * 99, [1] + [0] * 100,
                          [1, 1] + [0] * 80, [0] * 80])


def test_min_contains_zero_and_max_contains_zero():
    assert_exact({"contains": {"type": "string"}, "minContains": 0}, [[], [1], ["a", "b"]])
    assert_exact({"contains": {"type": "string"}, "minContains": 0, "maxContains": 0},
                 [[], [1], ["a"], [1, [2]]])


def _refusal(schema):
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema(schema)
    return err.value


def test_containers_partly_matched_are_split_by_their_shape():
    assert_exact({"contains": {"type": "array", "maxItems": 1}, "maxContains": 1},
                 [[[]], [[1, 2]], [[1], [2]], [[1, 2], [3]], [1, [2, 3]]])
    assert_exact({"contains": {"type": "object", "required": ["a"]}, "minContains": 2},
                 [[{"a": 1}], [{"a": 1}, {"b": 1}], [{"a": 1}, {"a": 2}], [{}, {"a": 1}, 3]])


def test_inexact_format_is_refused():
    err = _refusal({"items": {"contains": {"format": "email"}}})
    assert (err.keyword, err.pointer) == ("contains", "/items/contains")
    assert str(err) == (
        "contains at /items/contains: the complement cannot be built exactly: format 'email' at "
        "/items/contains is enforced more strictly than specified, so its complement would admit "
        "matching strings")


def test_a_subschema_without_an_exact_complement_is_refused_or_warned():
    schema = {"contains": {"type": "object", "propertyNames": {"maxLength": 1}}}
    err = _refusal(schema)
    assert str(err) == (
        "contains at /contains: the complement cannot be built exactly: 'propertyNames' at "
        "/contains/propertyNames: the objects violating it (through a member name it rejects) "
        "are not described by a schema of their own")
    assert str(err) in lower_json_schema(schema, lenient=True).warnings
    # a nested contains has one (by counts: see tests/test_json_not.py)
    assert_exact({"contains": {"type": "array", "contains": {"const": 1}}},
                 [[], [[]], [[1]], [[2]], [[1], [2]], [[2, 1]], [1], [3, [2]]])


def test_unknown_keywords_are_ignored_and_not_complements_scalars():
    assert_exact({"contains": {"x-vendor": 1, "const": 1}}, [[1], [2], [2, 1]])
    assert_exact({"contains": {"type": "integer", "not": {"const": 1}}, "maxContains": 1},
                 [[1], [2], [2, 3], [1, 1, 2], ["a", 2]])


def test_counter_budget():
    with pytest.raises(GrammarBudgetError, match="counts `contains` matches over 5000 positions"):
        lower_json_schema({"contains": {"const": 1}, "maxItems": 5000})
    with pytest.raises(GrammarBudgetError, match="need 301 states"):
        lower_json_schema({"contains": {"const": 1}, "minContains": 300})
    with pytest.raises(GrammarBudgetError, match="more than 3 `contains`"):
        lower_json_schema({"allOf": [{"contains": {"const": i}} for i in range(4)]})
