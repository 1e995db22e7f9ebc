"""`propertyNames` with properties, patternProperties, additionalProperties and required: the
matcher agrees with jsonschema on random schemas and objects over a small key domain."""
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import assert_exact  # noqa: E402

KEYS = ["a", "b", "ab", "ba", "abc", "c", "", "é", "a\"b"]
VALUES = st.one_of(st.integers(-1, 3), st.sampled_from(["", "x"]), st.none())
NAMES = st.one_of(
    st.builds(lambda k: {"maxLength": k}, st.integers(0, 3)),
    st.builds(lambda k: {"minLength": k}, st.integers(0, 3)),
    st.builds(lambda p: {"pattern": p}, st.sampled_from(["^a", "b", "^[ab]+$", "^.$"])),
    st.builds(lambda vs: {"enum": vs}, st.lists(st.sampled_from(KEYS), min_size=1, max_size=3)),
    st.builds(lambda v: {"const": v}, st.sampled_from(KEYS)),
    st.sampled_from([True, False, {"type": "string"}, {"type": "integer"},
                     {"anyOf": [{"const": "c"}, {"pattern": "^b"}]}]),
)
MEMBER = st.sampled_from([{}, {"type": "integer"}, {"type": "string"}, False])


@st.composite
def schemas(draw):
    schema = {"propertyNames": draw(NAMES)}
    props = draw(st.lists(st.sampled_from(KEYS), max_size=3, unique=True))
    if props:
        schema["properties"] = {k: draw(MEMBER) for k in props}
    if draw(st.booleans()):
        schema["patternProperties"] = {"^a": {"type": "integer"}}
    extra = draw(st.sampled_from([None, False, {"type": "string"}]))
    if extra is not None:
        schema["additionalProperties"] = extra
    required = draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True))
    if required:
        schema["required"] = required
    if draw(st.booleans()):
        schema["maxProperties"] = draw(st.integers(0, 3))
    if draw(st.integers(0, 3)) == 0:
        schema = {"allOf": [schema, {"propertyNames": draw(NAMES)}]}
    return schema


_SETTINGS = settings(max_examples=80, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(schemas(), st.lists(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4),
                           min_size=10, max_size=10))
def test_property_names_is_exact(schema, objects):
    assert_exact(schema, objects + ["abc", [1]])


def test_declared_names_the_subschema_rejects_cannot_appear():
    schema = {"propertyNames": {"maxLength": 2}, "properties": {"abc": {}, "a": {"type": "integer"}}}
    assert_exact(schema, [{}, {"a": 1}, {"abc": 1}, {"ab": 1}, {"a": 1, "xy": 2}, {"xyz": 1}])
    assert_exact({"propertyNames": {"enum": ["x", "y"]}, "required": ["z"]}, [{"z": 1}, {}])


def test_formats_and_escapes_in_keys():
    assert_exact({"propertyNames": {"format": "ipv4"}}, [{}, {"1.2.3.4": 1}, {"a": 1}])
    assert_exact({"propertyNames": {"pattern": "^[^\"]*$"}}, [{"a\"b": 1}, {"a\\b": 1}, {"ab": 1}])


def test_draft07_property_names():
    assert_exact({"propertyNames": {"maxLength": 1}, "additionalProperties": {"type": "integer"}},
                 [{"a": 1}, {"ab": 1}, {"a": "x"}], draft="draft-07")
