"""An ``anyOf`` with a branch every instance satisfies (``{}``, ``true``, or only annotations and
keys JSON Schema ignores) is the whole JSON language: its other branches are not built (so a
unique array in them cannot clash with a plain one at the same place), unless an
``unevaluated*`` keyword reads the branches' annotations."""
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact, matcher_accepts  # noqa: E402

from formwork.grammar.json_schema import compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.expand import Expander, Sub  # noqa: E402
from formwork.schemas import load_schema  # noqa: E402

JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=2),
                                                                                      inner, max_size=3),
                           max_leaves=6)
TRUE_BRANCHES = [{}, True, {"description": "Arbitrary YAML anchor."}, {"title": "t", "$comment": "c"},
                 # keys no draft defines: JSON Schema ignores them (webpack's "instanceof" branches)
                 {"instanceof": "RegExp", "tsType": "RegExp"}, {"x-kind": 1, "markdownDescription": "m"}]
CONSTRAINED = [{"type": "array", "items": {"type": "string"}, "uniqueItems": True},
               {"type": "object", "required": ["a"]}, {"const": 1}]


def alternatives(schema: dict) -> list:
    doc = load_schema(schema)
    ex = Expander(doc, ref_overrides_siblings=False)
    return ex.expand(Sub(schema, None, ""), lambda sub, branches: [a for b in branches for a in b])


@settings(max_examples=60, deadline=None)
@given(true_branch=st.sampled_from(TRUE_BRANCHES), other=st.sampled_from(CONSTRAINED),
       first=st.booleans(), values=st.lists(JSON_VALUES, min_size=1, max_size=6))
def test_an_any_of_with_a_true_branch_accepts_every_value(true_branch, other, first, values):
    branches = [true_branch, other] if first else [other, true_branch]
    schema = {"properties": {"x": {"anyOf": branches}}}
    assert_exact(schema, [{"x": v} for v in values])
    [alternative] = alternatives({"anyOf": branches})
    assert [s.pointer for s in alternative] == [""]  # the schema itself, no branch


def test_the_collapse_drops_the_unique_array_so_no_ambiguity_is_left():
    schema = {"type": "object", "properties": {"codes": {"anyOf": [
        {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, {"description": "anything"}]}}}
    grammar = compile_json_schema(schema, byte_vocab())  # refused as ambiguous before
    assert matcher_accepts(grammar, {"codes": [1, 1]})


def test_branches_are_kept_where_unevaluated_properties_reads_their_annotations():
    any_of = {"anyOf": [{"properties": {"a": {"type": "integer"}}}, {}]}
    instances = [{"a": 1}, {}, {"a": "x"}, {"b": 1}, {"a": 1, "b": 1}]
    beside = {**any_of, "unevaluatedProperties": False}
    assert {s.pointer for a in alternatives(beside) for s in a if s.pointer} == {"/anyOf/0", "/anyOf/1"}
    assert_exact(beside, instances)
    nested = {"allOf": [any_of], "unevaluatedProperties": False}  # seen through the allOf's expansion
    assert {s.pointer for a in alternatives(nested) for s in a if s.pointer} >= {"/allOf/0/anyOf/0"}
    assert_exact(nested, instances)
