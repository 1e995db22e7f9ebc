"""Overlapping `oneOf`: exactly one branch, through each branch minus the branches it overlaps
(scalars by canonical spelling, containers by their shape); the matcher agrees with jsonschema on
random branches over a small value domain; each refusal's message."""
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import LEAVES, NEGATABLE, assert_agrees  # noqa: E402

from formwork.grammar.errors import GrammarBudgetError  # noqa: E402
from formwork.grammar.json_schema import OneOfOverlapError, lower_json_schema  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def agrees_unless_over_budget(schema: dict) -> None:
    """`assert_agrees`, with a draw whose automaton passes the DFA-state budget discarded: that is a
    typed refusal, not an exactness question (some complements of array shapes need more than 100k
    states, e.g. a oneOf of `minimum`, a prefixItems of const objects and nested prefixItems); so is
    one whose complement splits into more alternatives than its budget allows (a prefixItems item
    that is an anyOf of enums of objects, beside another branch)."""
    try:
        assert_agrees(schema)
    except GrammarBudgetError as exc:
        if "DFA states" not in str(exc) and "alternatives" not in str(exc):
            raise
        reject()


@SETTINGS
@given(st.lists(NEGATABLE, min_size=2, max_size=3))
def test_overlapping_one_of_is_exact(branches):
    agrees_unless_over_budget({"oneOf": branches})


@SETTINGS
@given(st.lists(NEGATABLE, min_size=2, max_size=2), LEAVES)
def test_one_of_with_siblings_is_exact(branches, sibling):
    agrees_unless_over_budget({"allOf": [sibling, {"oneOf": branches}]})


def test_a_complement_past_its_alternatives_budget_is_a_typed_refusal():
    """The draw hypothesis found: the oneOf's second branch, complemented against the first, splits
    into more than 256 ways to violate it: a `GrammarBudgetError` (which `agrees_unless_over_budget`
    discards), not a wrong grammar."""
    branches = [{"properties": {"a": {"type": "null"}}},
                {"prefixItems": [{"anyOf": [{"const": {"a": 1}}, {"anyOf": [
                    {"enum": [{"b": "a"}, {"a": "a", "b": 1}]}, {"enum": [{"a": {"a": 1}}, {"kind": "b", "a": 1}]}]}]}]}]
    with pytest.raises(GrammarBudgetError, match="more than 256 alternatives"):
        lower_json_schema({"allOf": [{"type": "array"}, {"oneOf": branches}]})


def test_examples():
    assert_agrees({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]})
    assert_agrees({"type": "object", "oneOf": [{"required": ["a", "b"]}, {"required": ["a", "kind"]}]})
    assert_agrees({"oneOf": [{"properties": {"bar": {"type": "integer"}}, "required": ["bar"]},
                             {"properties": {"foo": {"type": "string"}}, "required": ["foo"]}]},
                  [{"bar": 2}, {"foo": "baz"}, {"foo": "baz", "bar": 2}, {"foo": 2, "bar": "q"}, {}])
    assert_agrees({"oneOf": [{"type": "array", "maxItems": 2}, {"prefixItems": [{"const": 1}]}]})


def test_refusal_names_the_branch_without_a_complement():
    schema = {"oneOf": [{"type": "object"}, {"properties": {"p": {"type": "integer"}},
                                             "propertyNames": {"maxLength": 1}}]}
    with pytest.raises(OneOfOverlapError) as err:
        lower_json_schema(schema)
    assert str(err.value) == (
        "oneOf at /oneOf/1: this branch overlaps another one, and 'exactly one' needs its "
        "complement, which cannot be built exactly: 'propertyNames' at "
        "/oneOf/1/propertyNames: the objects violating it (through a member name it rejects) "
        "are not described by a schema of their own")
    assert str(err.value) in lower_json_schema(schema, lenient=True).warnings


def test_overlapping_branch_with_additional_properties_excludes_it_by_a_witness_member():
    # an object matches the second branch unless some undeclared member is not a string
    objects = [{}, {"p": 1}, {"p": "x"}, {"q": "s"}, {"q": 1}, {"p": 1, "q": "s"},
               {"p": 1, "q": "s", "r": 2}, {"q": "s", "r": None}, [], "s"]
    assert_agrees({"oneOf": [{"type": "object"}, {"properties": {"p": {"type": "integer"}},
                                                  "additionalProperties": {"type": "string"}}]},
                  objects)
    assert_agrees({"oneOf": [{"additionalProperties": {"type": "integer"}},
                             {"additionalProperties": {"type": "string"}, "minProperties": 1}]},
                  objects)


def test_overlap_with_an_over_strict_format_is_refused():
    schema = {"oneOf": [{"maxLength": 3}, {"type": "string", "format": "email"}]}
    with pytest.raises(OneOfOverlapError) as err:
        lower_json_schema(schema)
    assert str(err.value) == (
        "oneOf at /oneOf/1: this branch overlaps another one, and 'exactly one' needs its "
        "complement, which cannot be built exactly: format 'email' at /oneOf/1 is enforced more "
        "strictly than specified, so its complement would admit matching strings")


def test_overlap_check_reaching_a_recursive_rule():
    # the overlap of the branches holds `step` again (a recursive rule, not compiled on its
    # own): taken as non-empty, so each branch excludes the other by its complement
    schema = {"$defs": {"step": {
        "type": "object", "oneOf": [{"required": ["run"]}, {"required": ["uses"]}],
        "properties": {"parallel": {"type": "array", "items": {"$ref": "#/$defs/step"}}}}},
        "$ref": "#/$defs/step"}
    assert_agrees(schema, [{}, {"run": 1}, {"uses": 1}, {"run": 1, "uses": 2},
                           {"run": 1, "parallel": [{"uses": 1}]}, {"uses": 1, "parallel": []},
                           {"run": 1, "parallel": [{"uses": 1, "run": 2}]},
                           {"parallel": [{"run": 1}]}])


def test_many_closed_branches_sharing_a_member_stay_few_alternatives():
    # 7 object branches, each additionalProperties false with an optional `if` (SchemaStore
    # buildkite.json's notifications): {} and {"if": ...} match all of them; each branch's
    # complement beside another's closed member set is "a bad `if`" (one subschema for all
    # branches) or "some other member": 2 alternatives, not 3 ** 6
    branches = [{"type": "object", "properties": {f"k{i}": {"type": "string"},
                                                  "if": {"type": "string"}},
                 "additionalProperties": False} for i in range(7)]
    assert_agrees({"oneOf": branches},
                  [{}, {"if": "x"}, {"k0": "a"}, {"k3": "a", "if": "x"}, {"k0": "a", "k1": "b"},
                   {"k6": 1}, {"if": 1}, {"k2": "a", "if": 1}, {"z": 1}, "s"])
