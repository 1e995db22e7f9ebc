"""The complements of ``additionalProperties`` and ``patternProperties`` (some member of a kind
with a value the keyword rejects, `grammar/json_schema/witnesses.py`): on random small object
schemas under ``not``, in overlapping ``oneOf`` and beside counts, the matcher accepts exactly
the objects jsonschema accepts (hypothesis draws both schemas and objects)."""
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_logic import assert_agrees  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

KEYS = st.sampled_from(["a", "b", "x1", "x2", "kind"])
VALUES = st.sampled_from([None, 0, 1, "s", "", [1], ["s"], {"a": 1}, {}])
OBJECTS = st.lists(st.dictionaries(KEYS, VALUES, max_size=3), min_size=6, max_size=12)
VALUE_SCHEMAS = st.sampled_from([
    False, {"type": "string"}, {"type": ["integer", "null"]}, {"minimum": 1},
    {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    {"required": ["a"]}, {"not": {"const": 1}}, {"maxLength": 0}])
PROPERTIES = st.dictionaries(st.sampled_from(["a", "b", "kind"]), VALUE_SCHEMAS, max_size=2)
PATTERNS = st.one_of(st.just({}), st.dictionaries(st.sampled_from(["^x", "^k", "1$"]),
                                                  VALUE_SCHEMAS, max_size=2))


@st.composite
def member_schemas(draw) -> dict:
    """An object schema whose complement needs a witness member."""
    schema = {"additionalProperties": draw(VALUE_SCHEMAS)}
    for keyword, strategy in (("properties", PROPERTIES), ("patternProperties", PATTERNS)):
        value = draw(strategy)
        if value:
            schema[keyword] = value
    if draw(st.booleans()):
        del schema["additionalProperties"]
        schema.setdefault("patternProperties", {"^x": draw(VALUE_SCHEMAS)})
    return schema


COUNTS = st.sampled_from([{}, {"minProperties": 2}, {"maxProperties": 2}, {"required": ["a"]},
                          {"properties": {"x1": {"type": "integer"}}}, {"type": "object"}])


@SETTINGS
@given(member_schemas(), COUNTS, OBJECTS)
def test_not_of_member_keywords_is_exact(target, sibling, objects):
    assert_agrees({**sibling, "not": target}, objects + [1, "s"])


@SETTINGS
@given(member_schemas(), member_schemas(), COUNTS, OBJECTS)
def test_overlapping_one_of_with_member_keywords_is_exact(first, second, sibling, objects):
    assert_agrees({**sibling, "oneOf": [first, second]}, objects)


@SETTINGS
@given(st.lists(member_schemas(), min_size=2, max_size=3), OBJECTS)
def test_several_witnesses_in_one_object_are_exact(targets, objects):
    # each `not` asks for a member of its own kind: one member may serve several of them
    assert_agrees({"allOf": [{"not": t} for t in targets]}, objects)
