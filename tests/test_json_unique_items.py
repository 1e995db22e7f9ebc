"""`uniqueItems: true` over finite element domains: the matcher agrees with jsonschema on random
schemas and arrays (duplicates included); other elements go to the matcher's comparison
(`test_json_unique_unbounded`)."""
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402

from formwork.grammar.json_schema import lower_json_schema  # noqa: E402

VALUES = st.one_of(st.integers(-1, 4), st.sampled_from(["a", "b"]), st.booleans(), st.none(),
                   st.sampled_from([[1], [1, 2], {"a": 1}, 1.0]))
FINITE = st.one_of(
    st.builds(lambda vs: {"enum": vs}, st.lists(VALUES, min_size=1, max_size=5)),
    st.builds(lambda v: {"const": v}, VALUES),
    st.sampled_from([{"type": "boolean"}, {"type": "null"}, {"type": ["boolean", "null"]}, False,
                     {"type": "integer", "minimum": 0, "maximum": 3},
                     {"type": "integer", "exclusiveMinimum": -1, "exclusiveMaximum": 2.5},
                     {"enum": [1, 2, 3, "a"], "type": "integer"}]),
)


@st.composite
def schemas(draw):
    schema = {"uniqueItems": True, "items": draw(FINITE)}
    if draw(st.booleans()):
        schema["prefixItems"] = draw(st.lists(FINITE, min_size=1, max_size=2))
    for key in ("minItems", "maxItems"):
        if draw(st.booleans()):
            schema[key] = draw(st.integers(0, 4))
    if draw(st.integers(0, 3)) == 0:
        schema["contains"] = draw(st.sampled_from([{"type": "integer"}, {"const": True},
                                                   {"type": "array"}]))
        schema["maxContains"] = draw(st.integers(0, 2))
    return schema


_SETTINGS = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(schemas(), st.lists(st.lists(VALUES, max_size=5), min_size=10, max_size=10))
def test_unique_items_over_finite_domains_is_exact(schema, arrays):
    # duplicates are what this is about: repeat each array's first element too
    assert_exact(schema, arrays + [a + a[:1] for a in arrays if a] + ["x"])


def test_examples():
    assert_exact({"uniqueItems": True, "items": {"enum": [1, 2, "a", None]}},
                 [[], [1], [1, 1], [1, 2, "a", None], [1, 2, 1], [None, None], [3]])
    assert_exact({"uniqueItems": True, "prefixItems": [{"type": "boolean"}, {"type": "boolean"}],
                  "items": False}, [[], [True, False], [True, True], [False, True, False]])
    assert_exact({"uniqueItems": True, "items": {"enum": [[1], {"a": 1}, [1.0], 1]}},
                 [[[1], [1]], [[1], {"a": 1}], [1, [1]]])


def test_draft07_positional_items():
    assert_exact({"uniqueItems": True, "items": [{"type": "boolean"}, {"type": "boolean"}],
                  "additionalItems": False}, [[True, False], [True, True], [False]],
                 draft="draft-07")


def test_elements_without_a_finite_domain_are_tagged_for_the_matcher():
    lowered = lower_json_schema({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    assert lowered.unique_arrays == ("/uniqueItems",) and lowered.warnings == []


def test_a_domain_behind_a_reference_is_decided_by_the_lowering():
    schema = {"$defs": {"s": {"type": "string"}}, "items": {"$ref": "#/$defs/s"}, "uniqueItems": True}
    assert lower_json_schema(schema).unique_arrays == ("/uniqueItems",)
    # the schema front end only sees plain item schemas: the lowering finds the finite domain
    lowered = lower_json_schema({"$defs": {"b": {"type": "boolean"}}, "items": {"allOf": [{"$ref": "#/$defs/b"}]},
                                 "prefixItems": [{"const": 3}], "uniqueItems": True})
    assert lowered.unique_arrays == ()
    assert_exact({"$defs": {"b": {"type": "boolean"}}, "items": {"allOf": [{"$ref": "#/$defs/b"}]},
                  "prefixItems": [{"const": 3}], "uniqueItems": True},
                 [[3, True, False], [3, True, True], [3, 3]])


def test_too_many_sets_of_items_leave_the_comparison_to_the_matcher():
    schema = {"items": {"enum": list(range(20))}, "uniqueItems": True}
    assert lower_json_schema(schema).unique_arrays == ("/uniqueItems",)
    assert_exact(schema, [list(range(20)), [1, 2, 1], [19, 0, 19], [3, 30]])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(8, 12), st.lists(st.lists(st.integers(0, 13), max_size=13), min_size=6, max_size=6))
def test_many_values_compile_within_the_default_budgets(k, arrays):
    # every order of the items reaches the same set: each set's continuation is built once (the
    # Angular CLI's ng-new aiConfig, 8 values, needed 1.1M NFA states built as a tree)
    schema = {"type": "array", "uniqueItems": True, "items": {"enum": [f"v{i}" for i in range(k)]}}
    assert lower_json_schema(schema).unique_arrays == ()  # the finite automaton, not the matcher
    names = [[f"v{i}" for i in a] for a in arrays]
    assert_exact(schema, names + [a + a[-1:] for a in names if a] + [[f"v{i}" for i in range(k)]])
