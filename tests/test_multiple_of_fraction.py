"""Fractional `multipleOf` (0.01, 0.5, 1e-8, 0.3, ...): exact over decimal spellings, compared with
exact `Fraction` arithmetic and with jsonschema (which divides floats: where its rounding disagrees,
e.g. 0.3 under 0.1, formwork follows the exact quotient; see `multiples`)."""
import json
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema, lower_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED, accepts  # noqa: E402
from formwork.grammar.json_schema.multiples import combined_divisor, integer_divisor  # noqa: E402

DIVISORS = [0.01, 0.5, 1e-8, 0.3, 2.5, 1.5, 0.0001, 0.25, 0.05, 0.125, 0.6, 0.1]
_DFAS: dict = {}


def accepted(schema, text: str) -> bool:
    key = json.dumps(schema, sort_keys=True)
    if key not in _DFAS:
        _DFAS[key] = SHARED.compile(lower_json_schema(schema).node)
    return accepts(_DFAS[key], text.encode())


def exact_multiple(text: str, divisor: float) -> bool:
    return (Fraction(Decimal(text)) / Fraction(Decimal(str(divisor)))).denominator == 1


spellings = st.builds(
    lambda neg, i, f: ("-" if neg else "") + str(i) + ("." + f if f else ""),
    st.booleans(), st.integers(0, 10 ** 6) | st.sampled_from([0, 1, 3, 10, 15, 45]),
    st.text(alphabet="0123456789", max_size=10) | st.sampled_from(["", "0", "5", "25", "3", "05", "0000"]))


def test_divisors_combine_into_their_least_common_multiple():
    assert combined_divisor([Decimal("0.01")]) == (1, 2)
    assert combined_divisor([Decimal("0.5"), Decimal("0.3")]) == (15, 1)  # lcm 1.5
    assert combined_divisor([Decimal("1E-8")]) == (1, 8)
    assert combined_divisor([Decimal("2.5"), Decimal("4")]) == (20, 0)
    assert integer_divisor(15, 1) == 3 and integer_divisor(1, 8) == 1


@pytest.mark.parametrize("divisor", DIVISORS)
@settings(max_examples=120, deadline=None)
@given(text=spellings)
def test_decimal_spellings_are_accepted_exactly_when_they_are_multiples(divisor, text):
    schema = {"type": "number", "multipleOf": divisor}
    got = accepted(schema, text)
    if Decimal(text) == 0 and text.startswith("-"):
        return  # negative zero spellings: the number grammar's own business
    assert got == exact_multiple(text, divisor), (divisor, text)
    valid = jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))
    if got != valid:  # only where the float quotient is inexact and the exact one is not
        quotient = json.loads(text) / divisor
        assert got and quotient != int(quotient), (divisor, text)


def test_jsonschemas_float_rounding_is_where_formwork_and_jsonschema_differ():
    schema = {"type": "number", "multipleOf": 0.1}
    assert accepted(schema, "0.3") and not jsonschema.Draft202012Validator(schema).is_valid(0.3)
    assert accepted(schema, "0.2") and jsonschema.Draft202012Validator(schema).is_valid(0.2)
    assert not accepted(schema, "0.35")


def test_multiples_meet_bounds_types_and_all_of():
    assert [x for x in ("0", "0.25", "0.5", "0.75", "1", "1.25", "0.3")
            if accepted({"multipleOf": 0.25, "minimum": 0, "maximum": 1}, x)] == [
        "0", "0.25", "0.5", "0.75", "1"]
    assert [n for n in range(-7, 8) if accepted({"type": "integer", "multipleOf": 1.5}, str(n))] == [
        -6, -3, 0, 3, 6]
    assert all(accepted({"type": "integer", "multipleOf": 1e-8}, str(n)) for n in (0, 7, -12391239123))
    both = {"allOf": [{"multipleOf": 0.5}, {"multipleOf": 0.3}]}
    assert [x for x in ("1.5", "3", "0.3", "0.5", "4.5", "-1.50") if accepted(both, x)] == [
        "1.5", "3", "4.5", "-1.50"]
    assert accepted({"multipleOf": 0.01}, '"text"')  # multipleOf constrains numbers only


def test_multiples_are_spelled_without_an_exponent():
    assert accepted({"multipleOf": 0.01}, "0.05") and not accepted({"multipleOf": 0.01}, "5e-2")


def test_a_divisor_past_the_residue_budget_is_refused_with_its_pointer():
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"properties": {"price": {"type": "number", "multipleOf": 0.07}}})
    assert str(err.value) == ("multipleOf at /properties/price/multipleOf: multipleOf: the "
                              "divisibility automaton is too large to lower")
    with pytest.raises(UnsupportedSchemaError) as err:
        lower_json_schema({"multipleOf": 0.123456789})
    assert str(err.value) == ("multipleOf at /multipleOf: multipleOf: divisibility by 123456789 "
                              "needs a residue automaton above the budget of 64 states")


def test_a_compiled_grammar_with_a_price():
    g = compile_json_schema({"type": "object", "properties": {"price": {"type": "number", "multipleOf": 0.01,
                                                                      "minimum": 0}},
                             "required": ["price"], "additionalProperties": False}, byte_vocab())
    m = g.matcher()
    assert m.accept_string('{"price": 19.99}') and m.can_terminate()
    assert not g.matcher().accept_string('{"price": 19.999')
