"""The uniqueItems ambiguity check (`formwork.grammar.unique_ambiguity`): the search that jumps over
lexemes answers as the whole tagged automaton does, and schemas mixing unique and plain arrays in
anyOf/oneOf branches compile exactly or are refused as ambiguous.

Properties: random regular IR over a few bytes, with tagged arrays, lexemes and embedded DFAs
(`And` of a node with itself), where the full subset construction is small enough to build; random
schemas whose branches put arrays with and without uniqueItems behind keys that may or may not
tell them apart (string patterns, numbers), checked against jsonschema."""
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.dfa import DEAD  # noqa: E402
from formwork.grammar.errors import EmptyLanguageError  # noqa: E402
from formwork.grammar.ir import And, Not, alt, lit, repeat, seq  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED  # noqa: E402
from formwork.grammar.json_schema.errors import OneOfOverlapError  # noqa: E402
from formwork.grammar.json_schema.unique_arrays import misplaced, strip_tags  # noqa: E402
from formwork.grammar.lexemes import lexeme  # noqa: E402
from formwork.grammar.unique_ambiguity import ambiguous  # noqa: E402
from formwork.grammar.unique_scan import TAG  # noqa: E402

OPENS = lit(bytes([TAG]) + b"[")  # a unique array's start: the tag right before its bracket


def whole_automaton_says(dfa) -> bool:
    """The definition: some state of the fully built automaton moves on TAG and on '['."""
    if dfa.lazy:
        dfa = dfa.twin(CompileBudget().start())
        dfa.expand_all()
    class_of_byte, rows = dfa.byte_classes()
    return bool(np.any((rows[:, class_of_byte[TAG]] != DEAD) & (rows[:, class_of_byte[0x5B]] != DEAD)))


def untagged():
    """Regular IR over x, y, '[' and ']' without tags, with lexemes and embedded DFAs."""
    leaves = st.sampled_from([lit("x"), lit("y"), lit("["), lit("]"), lit("xy")])
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: seq(*p)),
        st.tuples(inner, inner).map(lambda p: alt(*p)),
        st.tuples(inner, st.sampled_from([(0, None), (1, None), (0, 1), (1, 2)]))
        .map(lambda p: repeat(p[0], *p[1])),
        st.tuples(inner, st.sampled_from([(1, None), (0, None), (2, 3)]))
        .map(lambda p: lexeme(repeat(p[0], *p[1]))),
        inner.map(lambda n: And(n, n)),
    ), max_leaves=6)


def tagged_ir():
    """Untagged IR with tagged openings spliced in: a sequence of pieces and alternatives."""
    piece = st.one_of(untagged(), st.just(OPENS))
    return st.recursive(piece, lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: seq(*p)),
        st.tuples(inner, inner).map(lambda p: alt(*p)),
        inner.map(lambda n: repeat(n, 0, None)),
    ), max_leaves=5)


_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(tagged_ir())
def test_search_answers_as_the_whole_automaton(node):
    budget = CompileBudget(max_seconds=120).start()  # an equivalence check, not a speed one: no CPU race
    dfa = SHARED.compile(node, budget, keep=False)
    assert ambiguous(dfa, budget) == whole_automaton_says(dfa)


@pytest.mark.parametrize("tail, expected", [
    (alt(OPENS, lit("[")), True),  # the same place: unique or not
    (alt(seq(lit("x"), OPENS), lit("[")), True),  # "xx": the lexeme, or the lexeme and one more x
    (alt(OPENS, seq(lit("y"), lit("["))), False),  # the lexeme's end is jumped over
    (alt(seq(lit("xy"), OPENS), seq(lit("yy"), lit("["))), False),  # x may go on or leave: expanded
])
def test_lexemes_that_may_end_or_go_on(tail, expected):
    node = seq(lexeme(repeat(lit("x"), 1, None)), tail)
    budget = CompileBudget().start()
    dfa = SHARED.compile(node, budget, keep=False)
    assert ambiguous(dfa, budget) is expected is whole_automaton_says(dfa)


KEYS = st.sampled_from([
    {"type": "string", "pattern": "^a+$"},
    {"type": "string", "pattern": "^b+$"},
    {"type": "string"},
    {"const": "a"},
    {"type": "number"},
    {"type": "integer", "minimum": 0},
])
ITEMS = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "string", "maxLength": 2}])


@st.composite
def mixed_schemas(draw):
    """anyOf/oneOf of objects {k, v} (or bare arrays) whose v arrays are unique or not."""
    def branch():
        array = {"type": "array", "items": draw(ITEMS), "uniqueItems": draw(st.booleans())}
        if draw(st.booleans()):
            return array
        return {"type": "object", "properties": {"k": draw(KEYS), "v": array}, "required": ["k", "v"],
                "additionalProperties": False}
    return {draw(st.sampled_from(["anyOf", "oneOf"])): [branch() for _ in range(draw(st.integers(2, 3)))]}


VALUES = st.sampled_from(["a", "aa", "b", "ab", 1, 12, 2.5, -1])
INSTANCES = st.one_of(
    st.lists(VALUES, max_size=3),
    st.fixed_dictionaries({"k": VALUES, "v": st.lists(VALUES, max_size=3)}),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_schemas(), st.lists(INSTANCES, min_size=4, max_size=8))
def test_mixed_branches_compile_exactly_or_are_refused(schema, instances):
    duplicated = [x + x[:1] if isinstance(x, list) else {**x, "v": x["v"] + x["v"][:1]} for x in instances]
    try:
        compile_json_schema(schema, byte_vocab())
    except (UnsupportedSchemaError, OneOfOverlapError) as exc:  # ambiguous, or unique under overlapping oneOf
        assert "uniqueItems" in str(exc), str(exc)
        return
    except EmptyLanguageError:  # oneOf of equal branches: nothing is valid
        validator = jsonschema.Draft202012Validator(schema)
        assert not any(validator.is_valid(x) for x in instances + duplicated)
        return
    assert_exact(schema, instances + duplicated)


def test_a_state_at_two_places_of_one_embedded_dfa_lies_in_no_lexeme():
    item = repeat(lit("xy"), 1, 2)
    dfa = SHARED.compile(repeat(And(item, item), 0, None), CompileBudget().start(), keep=False)
    state = dfa.walk(1, b"xy")  # inside the embedded DFA after "xy", and at its start again
    assert dfa.lexeme_state(state) is None and dfa.accepts(b"xyxyxy")


def _deep(bottom, depth=3000):
    """`bottom` under `depth` alternations, each beside a sequence (neither flattens the other)."""
    node = bottom
    for i in range(depth):
        node = alt(lit(f"k{i}"), seq(lit("x"), node))
    return node


def test_tags_are_found_and_stripped_in_ir_nested_thousands_deep():
    assert misplaced(_deep(OPENS)) is None
    assert misplaced(_deep(Not(seq(OPENS, lit("]"))))).startswith("a unique array under a complement")
    node = strip_tags(_deep(seq(OPENS, lit("]"))))
    for _ in range(2999):
        node = node.items[1].items[1]  # alt(k, seq(x, ...)) down to the bottom
    assert node == alt(lit("k0"), lit("x[]"))  # seq(x, tag, '[', ']') is one Bytes there
