"""`not` of a schema with several applicators is negated factor by factor (`factored.py`): exact
against jsonschema on random schemas mixing own keywords, allOf, anyOf, oneOf, if/then/else,
dependentRequired/dependentSchemas and $ref; and the shape of Swagger 1.2's dataTypeBase (a
oneOf beside a dependency on a oneOf of three), whose expanded complement passed the 256
alternatives budget, compiles and is exact."""
import sys
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402
from json_logic import CONDITIONS, INSTANCES, LEAVES, NAMES, assert_agrees  # noqa: E402

from formwork.grammar import GrammarBudgetError  # noqa: E402
from formwork.grammar.json_schema import (  # noqa: E402
    OneOfOverlapError, UnsupportedSchemaError, lower_json_schema,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

OBJECTS = st.one_of(
    st.builds(lambda n, s: {"properties": {n: s}}, NAMES, LEAVES),
    st.builds(lambda n, s: {"properties": {n: s}, "required": [n]}, NAMES, LEAVES),
    st.builds(lambda ps: {"properties": ps, "additionalProperties": False},
              st.dictionaries(NAMES, LEAVES, max_size=2)),
    LEAVES,
)


def _applicators(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.builds(lambda a, b: {"allOf": [a, b]}, inner, inner),
        st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
        st.builds(lambda a, b: {"oneOf": [a, b]}, inner, inner),
        st.builds(lambda c, t, e: {"if": c, "then": t, "else": e}, CONDITIONS, inner, inner),
        st.builds(lambda c, t: {"if": c, "then": t}, CONDITIONS, inner),
        st.builds(lambda n, ns: {"dependentRequired": {n: ns}}, NAMES,
                  st.lists(NAMES, min_size=1, max_size=2, unique=True)),
        st.builds(lambda n, s: {"dependentSchemas": {n: s}}, NAMES, inner),
        st.just({"$ref": "#/$defs/d"}),  # DEFS' "d", which each test draws
    )


PARTS = st.recursive(OBJECTS, _applicators, max_leaves=3)
#: A schema object with its own keywords and two applicators (so it has several factors).
FACTORED = st.builds(lambda own, a, b: {**b, **a, **(own if isinstance(own, dict) else {})},
                     OBJECTS, _applicators(PARTS), _applicators(PARTS))


def _agrees_unless_refused(schema: dict, d) -> None:
    schema = {**schema, "$defs": {"d": d}}
    try:
        lower_json_schema(schema)
    except (UnsupportedSchemaError, OneOfOverlapError, GrammarBudgetError):
        assume(False)  # a typed refusal (an uncomplementable keyword), not an exactness question
    assert_agrees(schema)


@SETTINGS
@given(FACTORED, OBJECTS)
def test_the_factored_complement_is_exact(schema, d):
    _agrees_unless_refused({"not": schema}, d)


@SETTINGS
@given(OBJECTS, FACTORED, OBJECTS)
def test_the_factored_complement_beside_other_keywords_is_exact(positive, schema, d):
    own = positive if isinstance(positive, dict) else {"allOf": [positive]}
    _agrees_unless_refused({**own, "not": schema}, d)


@SETTINGS
@given(FACTORED, FACTORED, OBJECTS)
def test_overlapping_one_of_branches_with_factors_are_exact(a, b, d):
    _agrees_unless_refused({"oneOf": [a, b]}, d)


def _typed(kinds: list) -> dict:
    return {"oneOf": [{"properties": {"kind": {"enum": [k]}, "a": {"enum": f}}} for k, f in kinds]}


#: Swagger 1.2's dataTypeBase, shrunk: a oneOf of two requireds, declared members, and a
#: dependency of `a` on a oneOf of three (kind, a) pairs.
DATA_TYPE_BASE = {
    "type": "object",
    "oneOf": [{"required": ["kind"]}, {"required": ["ref"]}],
    "properties": {"kind": {"type": "string"}, "ref": {"type": "string"},
                   "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"},
                   "d": {"not": {"type": ["array", "object", "null"]}}, "e": {"type": "boolean"},
                   "f": {"type": "string"}, "g": {"type": "string"}, "h": {"type": "boolean"}},
    "dependentSchemas": {"a": _typed([("int", ["i32", "i64"]), ("num", ["f", "d"]),
                                      ("str", ["byte", "date"])])},
}
MODEL_INSTANCES = [
    {}, {"kind": "x"}, {"ref": "r"}, {"kind": "x", "ref": "r"}, {"kind": 1},
    {"kind": "int", "a": "i32"}, {"kind": "int", "a": "f"}, {"kind": "str", "a": "date"},
    {"ref": "r", "a": "i64"}, {"ref": "r", "kind": "num", "a": "d"}, {"kind": "x", "d": []},
    {"kind": "x", "d": 3}, {"kind": "x", "e": "no"}, {"kind": "x", "h": True, "g": "g"},
    {"ref": "r", "b": 1}, {"kind": "x", "zz": 1}, [], "s",
]


def test_the_complement_of_a_one_of_beside_a_dependency_on_a_one_of_compiles_exactly():
    assert_exact({"not": DATA_TYPE_BASE}, MODEL_INSTANCES + INSTANCES)
    # modelsObject's propertyObject: a dataTypeBase that is not a model (`{props: ...}`),
    # itself negated where a model's properties must not be models
    model = {"type": "object", "required": ["kind", "props"],
             "properties": {"props": {"type": "object",
                                      "additionalProperties": {"$ref": "#/$defs/property"}}},
             "$defs": {"property": {"allOf": [{"not": {"$ref": "#"}}, DATA_TYPE_BASE]}}}
    props = [{}, {"p": {"kind": "x"}}, {"p": {"kind": "x", "ref": "r"}},
             {"p": {"kind": "int", "a": "f"}}, {"p": {"kind": "x", "props": {}}},
             {"p": {"kind": "str", "a": "byte"}, "q": {"ref": "r"}}]
    assert_exact(model, [{"kind": "m", "props": p} for p in props] + [{"kind": "m"}, {}])


KINDS = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=2, unique=True)
#: An object alternative that requires "kind" from a set of strings (one member of a oneOf).
KINDED = st.builds(lambda kinds, more, extra: {
    **extra, "required": ["kind", *more.get("required", [])],
    "properties": {**more.get("properties", {}), "kind": {"enum": kinds}}},
    KINDS, st.sampled_from([{}, {"required": ["a"]}, {"properties": {"a": {"type": "integer"}}},
                            {"properties": {"b": {"type": "string"}}, "required": ["b"]}]),
    st.sampled_from([{}, {"additionalProperties": False}, {"maxProperties": 2}, {"type": "object"}]))


@SETTINGS
@given(st.lists(KINDED, min_size=2, max_size=4), OBJECTS)
def test_the_complement_of_a_discriminated_one_of_is_exact(branches, d):
    _agrees_unless_refused({"not": {"oneOf": branches}}, d)
    _agrees_unless_refused({"oneOf": [*branches, {"required": ["a"]}]}, d)


#: AsyncAPI 2.6.0's SecurityScheme, shrunk: a oneOf of schemes told apart by a required `type`.
SCHEMES = {"oneOf": [
    {"type": "object", "required": ["type", *extra],
     "properties": {"type": {"type": "string", "enum": kinds}, "description": {"type": "string"},
                    **{name: {"type": "string"} for name in extra}},
     "patternProperties": {"^x-": {}}, "additionalProperties": False}
    for kinds, extra in [(["userPassword"], []), (["apiKey"], ["in"]), (["X509"], []),
                         (["symmetricEncryption"], []), (["asymmetricEncryption"], []),
                         (["http"], ["scheme"]), (["httpApiKey"], ["name", "in"]),
                         (["oauth2"], ["flows"]), (["openIdConnect"], ["openIdConnectUrl"]),
                         (["plain", "scramSha256", "scramSha512"], []), (["gssapi"], [])]]}


def test_the_complement_of_many_schemes_told_apart_by_type_compiles_exactly():
    instances = [{}, {"type": "X509"}, {"type": "X509", "in": "user"}, {"type": "apiKey"},
                 {"type": "apiKey", "in": "user"}, {"type": "http", "scheme": 1},
                 {"type": "plain"}, {"type": "plain", "x-a": 1}, {"type": "other"}, {"type": 3},
                 {"type": "oauth2", "flows": "f", "description": "d"}, {"description": "d"}, []]
    assert_exact({"not": SCHEMES}, instances)
    assert_exact({"type": "object", "properties": {"s": {"not": SCHEMES}}},
                 [{"s": i} for i in instances])


def test_factors_past_the_budget_fall_back_to_the_whole_expansion():
    """The suite's 'dynamic evalation inside nested refs' (unevaluatedProperties.json, 2019-09 and
    2020-12): a oneOf of a $ref to a oneOf beside required members; its factors split past 256
    alternatives (refused after 61f69b3), the whole-schema expansion does not."""
    one = {"oneOf": [{"$ref": "#/$defs/two"}, {"required": ["b"], "properties": {"b": True}},
                     {"required": ["xx"], "patternProperties": {"x": True}},
                     {"required": ["all"], "unevaluatedProperties": True}]}
    two = {"oneOf": [{"required": ["c"], "properties": {"c": True}},
                     {"required": ["d"], "properties": {"d": True}}]}
    schema = {"$defs": {"one": one, "two": two},
              "oneOf": [{"$ref": "#/$defs/one"}, {"required": ["a"], "properties": {"a": True}}],
              "unevaluatedProperties": False}
    assert_exact(schema, [{}, {"a": 1}, {"b": 1}, {"c": 1}, {"d": 1}, {"a": 1, "b": 1}, {"c": 1, "d": 1},
                          {"xx": 1}, {"xx": 1, "foox": 1}, {"xx": 1, "foo": 1}, {"all": 1, "foo": 1},
                          {"all": 1, "a": 1}, {"a": 1, "foo": 1}, {"c": 1, "e": 1}])
