"""`if`/`then`/`else`: (if and then) or (not if, and else), the complement built as for `not`; the
matcher agrees with jsonschema on random conditionals (type tests, discriminators, scalar
conditions) over a small value domain; each refusal's message."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import CONDITIONS, LEAVES, NEGATABLE, assert_agrees  # noqa: E402

from formwork.grammar.json_schema import UnsupportedSchemaError, lower_json_schema  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BRANCHES = st.one_of(st.none(), NEGATABLE)


def conditional(cond, then, else_):
    schema = {"if": cond}
    if then is not None:
        schema["then"] = then
    if else_ is not None:
        schema["else"] = else_
    return schema


@SETTINGS
@given(CONDITIONS, BRANCHES, BRANCHES)
def test_if_then_else_is_exact(cond, then, else_):
    assert_agrees(conditional(cond, then, else_))


@SETTINGS
@given(NEGATABLE, LEAVES, LEAVES)
def test_any_negatable_condition_is_exact(cond, then, else_):
    assert_agrees(conditional(cond, then, else_))


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), LEAVES, st.booleans()),
                min_size=1, max_size=4),
       st.sampled_from([{}, {"type": "object"}, {"type": "object", "required": ["kind"]},
                        {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}}}]))
def test_discriminated_variants_are_exact(variants, base):
    # the usual form: one if/then per discriminator value, side by side in allOf (the
    # expansion drops the combinations that ask two values of "kind" of one object)
    schema = {**base, "allOf": [
        {"if": {"properties": {"kind": {"const": kind}}, **({"required": ["kind"]} if req else {})},
         "then": then}
        for kind, then, req in variants]}
    assert_agrees(schema)


def test_many_discriminated_variants_compile():
    # 12 conditionals would be 4096 alternatives; 13 of them can hold an object
    kinds = [f"k{i}" for i in range(12)]
    schema = {"type": "object", "required": ["kind"], "properties": {"kind": {"enum": kinds}},
              "allOf": [{"if": {"properties": {"kind": {"const": k}}},
                         "then": {"required": [f"p{i}"], "properties": {f"p{i}": {"type": "integer"}}}}
                        for i, k in enumerate(kinds)]}
    assert_agrees(schema, [{"kind": "k1", "p1": 3}, {"kind": "k1", "p0": 3}, {"kind": "k11"},
                           {"kind": "k11", "p11": "x"}, {"kind": "k11", "p11": 1, "p0": "x"},
                           {"kind": "k12"}, {"p1": 1}, 3])


def test_examples():
    assert_agrees({"if": {"exclusiveMaximum": 0}, "then": {"minimum": -10},
                   "else": {"multipleOf": 2}}, [-100, -10, -1, 0, 1, 2, 3, "x", None])
    assert_agrees({"type": "object", "if": {"properties": {"kind": {"const": "a"}}},
                   "then": {"required": ["b"]}, "else": {"required": ["a"]}})
    assert_agrees({"if": {"type": "string"}, "then": {"maxLength": 1}, "else": {"type": "integer"}})
    assert_agrees({"properties": {"p": {"if": {"minimum": 1}, "then": {"maximum": 1}}}},
                  [{}, {"p": 0}, {"p": 1}, {"p": 2}, {"p": 1.5}, {"p": "x"}])


def test_draft07_conditional_is_exact():
    assert_agrees({"if": {"items": [{"const": 1}]}, "then": {"maxItems": 1},
                   "else": {"type": "array"}}, [[], [1], [1, 2], [2], [2, 3], {}, 1],
                  draft="draft-07")


def test_refusal_names_if_and_its_pointer():
    schema = {"properties": {"p": {"if": {"propertyNames": {"maxLength": 1}},
                                   "else": {"required": ["x"]}}}}
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema(schema)
    assert str(err.value) == (
        "if at /properties/p/if: the complement cannot be built exactly: 'propertyNames' "
        "at /properties/p/if/propertyNames: the objects violating it (through a member name it "
        "rejects) are not described by a schema of their own")
    assert str(err.value) in lower_json_schema(schema, lenient=True).warnings
