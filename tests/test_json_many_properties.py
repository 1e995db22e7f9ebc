"""Objects with many optional properties: the member list is exact (random property sets, required
subsets, min/maxProperties, additional and pattern properties, dependentRequired, against
`jsonschema`) and its automaton grows linearly with the number of properties."""
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

NAMES = [f"p{i}" for i in range(8)]
EXTRA = ["x", "zz"]  # undeclared keys ("x" matches the pattern below)
VALUES = st.one_of(st.integers(0, 2), st.sampled_from(["s"]))
_SETTINGS = settings(max_examples=20, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def object_schemas(draw):
    names = NAMES[:draw(st.integers(1, len(NAMES)))]
    schema = {"properties": {n: draw(st.sampled_from([{}, {"type": "integer"}, {"type": "string"}]))
                             for n in names}}  # no type: other values keep the language non-empty
    required = draw(st.lists(st.sampled_from(names + EXTRA[:1]), max_size=3, unique=True))
    if required:
        schema["required"] = required
    low = draw(st.one_of(st.none(), st.integers(0, 5)))
    high = draw(st.one_of(st.none(), st.integers(0, 6)))
    if low is not None:
        schema["minProperties"] = low
    if high is not None:
        schema["maxProperties"] = high
    extra = draw(st.sampled_from([None, False, {"type": "integer"}]))
    if extra is not None:
        schema["additionalProperties"] = extra
    if draw(st.booleans()):
        schema["patternProperties"] = {"^x": {"type": "string"}}
    if draw(st.booleans()):
        schema["dependentRequired"] = {names[0]: [names[-1]]}
    return schema


@st.composite
def schemas_and_instances(draw):
    """A schema and objects with its declared keys in schema order and undeclared ones last, "x"
    before "zz" (the member order the grammar emits: an instance is exact only in that order), plus
    a few non-objects."""
    schema = draw(object_schemas())
    declared = list(schema["properties"])
    out = []
    for _ in range(8):
        keys = [n for n in declared if draw(st.booleans())] + [x for x in EXTRA if draw(st.booleans())]
        out.append({k: draw(VALUES) for k in keys})
    return schema, out + [{}, 3]


@_SETTINGS
@given(schemas_and_instances())
def test_objects_with_optional_properties_are_exact(case):
    schema, objects = case
    assert_exact(schema, objects)


def _nfa_states(count: int, **keywords) -> int:
    schema = {"type": "object", **keywords,
              "properties": {f"field_{i}": {"type": ["string", "null"], "maxLength": 64}
                             for i in range(count)}}
    vocab = byte_vocab()
    grammar = compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False))
    return grammar.dfa.nfa.num_states


def test_the_automaton_grows_linearly_with_the_properties():
    """Doubling the optional properties about doubles the document NFA, with or without counts
    (minProperties, maxProperties, a required subset); built as a tree it grew quadratically
    (no count) or exponentially (a count below the cap)."""
    for keywords in ({}, {"minProperties": 3}, {"maxProperties": 4, "required": ["field_0"]}):
        sizes = [_nfa_states(n, **keywords) for n in (20, 40, 80)]
        assert sizes[1] <= 2.2 * sizes[0] and sizes[2] <= 2.2 * sizes[1], (keywords, sizes)


def test_long_anyof_lists_compile_and_are_exact():
    """An anyOf of hundreds of consts beside other keywords is as many alternatives as it lists
    (past the 256 a product of alternatives may give), and exact; so is a large enum."""
    words = [f"option-{i:03d}" for i in range(400)]
    listed = {"type": "string", "anyOf": [{"const": w} for w in words]}
    samples = [words[0], words[399], words[123], "option-400", "option-12", 7]
    assert_exact({"properties": {"kind": listed}}, [{"kind": w} for w in samples])
    assert_exact({"properties": {"kind": {"enum": words}}}, [{"kind": w} for w in samples])
