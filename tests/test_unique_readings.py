"""Where one `[` may open a unique array or another one (anyOf/oneOf branches disagreeing on
uniqueItems at the same place), the matcher follows both readings (`UniqueTracker`): a document is
accepted iff jsonschema says it is valid, the mask equals `accept_token`, and the real schemas that
were refused for it (SchemaStore travis and gitlab-ci, webpack's options) compile and decide their
instances as jsonschema does."""
import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact, matcher_accepts  # noqa: E402
from test_json_unique_unbounded import STOP, VOCAB  # noqa: E402
from mask_probe import accepted_tokens, mask_of  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.errors import EmptyLanguageError  # noqa: E402
from formwork.grammar.ir import Not, alt, lit, seq  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.errors import OneOfOverlapError  # noqa: E402
from formwork.grammar.json_schema.unique_arrays import misplaced, strip_tags  # noqa: E402
from formwork.grammar.unique_scan import TAG  # noqa: E402

DATA = Path(__file__).parent / "data"

SCALAR_ITEMS = [{"type": "string"}, {"type": "integer"}, {"type": "string", "maxLength": 2},
                {"enum": ["a", "b", 1]}]
KEYS = st.sampled_from([
    {"type": "string", "pattern": "^a+$"}, {"type": "string", "pattern": "^b+$"}, {"type": "string"},
    {"const": "a"}, {"type": "number"}, {"type": "integer", "minimum": 0},
])


@st.composite
def arrays(draw, depth: int = 1):
    """An array schema, unique or not, of scalars or (once) of arrays drawn the same way."""
    items = draw(st.sampled_from(SCALAR_ITEMS)) if depth == 0 or draw(st.booleans()) \
        else draw(arrays(depth - 1))
    out = {"type": "array", "items": items, "uniqueItems": draw(st.booleans())}
    if draw(st.booleans()):
        out["maxItems"] = draw(st.integers(1, 3))
    return out


@st.composite
def mixed_schemas(draw):
    """anyOf/oneOf of arrays or objects {k, v} whose arrays are unique or not, where branches often
    share a prefix ('[', '{"k":"a","v":[') and part of their language."""
    def branch():
        if draw(st.booleans()):
            return draw(arrays())
        return {"type": "object", "properties": {"k": draw(KEYS), "v": draw(arrays())}, "required": ["k", "v"],
                "additionalProperties": False}
    branches = [branch() for _ in range(draw(st.integers(2, 3)))]
    if draw(st.integers(0, 4)) == 0:
        branches.append({})  # any value: duplicates are always fine there
    return {draw(st.sampled_from(["anyOf", "oneOf"])): branches}


POOLS = [["a", "b", "c"], ["a", "aa", "ab", "abc"], [1, 12, -1], ["a", "b", 1, 2.5]]


@st.composite
def lists(draw):
    """A list of items from one pool (so that it often fits one branch, or two), or of such lists."""
    values = st.sampled_from(draw(st.sampled_from(POOLS)))
    if draw(st.booleans()):
        return draw(st.lists(values, max_size=4))
    return draw(st.lists(st.lists(values, max_size=3), max_size=3))


INSTANCES = st.one_of(lists(), st.fixed_dictionaries({"k": st.sampled_from(["a", "aa", "b", 1, 2.5]), "v": lists()}))


def _duplicated(instance):
    """The instance with the first item of its array (and of that item, if an array) repeated."""
    if isinstance(instance, dict):
        return {**instance, "v": _duplicated(instance["v"])}
    if instance and isinstance(instance[0], list):
        instance = [_duplicated(instance[0]), *instance[1:]]
    return instance + instance[:1]


def _compiled_or_refused(schema, instances):
    """The grammar, or None where it is rightly refused or empty (checked here)."""
    try:
        return compile_json_schema(schema, byte_vocab())
    except (UnsupportedSchemaError, OneOfOverlapError) as exc:  # unique under overlapping oneOf
        assert "uniqueItems" in str(exc), str(exc)
        assert "may have to have distinct items or not" not in str(exc)
    except EmptyLanguageError:  # oneOf of equal branches: nothing is valid
        validator = jsonschema.Draft202012Validator(schema)
        assert not any(validator.is_valid(x) for x in instances)
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_schemas(), st.lists(INSTANCES, min_size=4, max_size=8))
def test_branches_disagreeing_on_unique_items_are_exact(schema, instances):
    instances = instances + [_duplicated(x) for x in instances]
    if _compiled_or_refused(schema, instances) is not None:
        assert_exact(schema, instances)


AMBIGUOUS = [
    {"anyOf": [{"type": "array", "items": {"type": "string"}, "uniqueItems": True},
               {"type": "array", "items": {"type": "integer"}}]},
    {"anyOf": [{"type": "array", "items": {"type": "string", "maxLength": 1}, "uniqueItems": True},
               {"type": "array", "items": {"enum": ["a", "b", 1]}, "maxItems": 3}]},
    {"anyOf": [{"type": "array", "items": {"type": "array", "items": {"enum": ["a", 1]}, "uniqueItems": True}},
               {"type": "array", "items": {"type": "array", "items": {"enum": ["a", "b"]}}, "uniqueItems": True}]},
]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(AMBIGUOUS), st.data())
def test_the_mask_equals_accept_token_with_two_readings(schema, data):
    grammar = compile_json_schema(schema, VOCAB, compiler=GrammarCompiler(VOCAB))
    matcher = grammar.matcher(max_step_seconds=None)
    text = b""
    for _ in range(30):
        mask, accepted = mask_of(matcher, VOCAB.vocab_size), accepted_tokens(matcher, VOCAB.vocab_size)
        assert (mask == accepted).all(), (schema, text, [VOCAB.token_bytes[t] for t in np.flatnonzero(mask != accepted)])
        tokens = [int(t) for t in np.flatnonzero(accepted) if t != STOP]
        if not tokens:
            break
        token = tokens[data.draw(st.integers(0, len(tokens) - 1))]
        assert matcher.accept_token(token)
        text += VOCAB.token_bytes[token]
    if matcher.can_terminate():
        assert jsonschema.Draft202012Validator(schema).is_valid(json.loads(text))


def test_a_duplicate_is_refused_only_where_every_reading_refuses_it():
    schema = AMBIGUOUS[1]
    grammar = compile_json_schema(schema, byte_vocab())
    assert grammar.matcher().accept_string('["a","a","a"')  # the plain reading (enum, at most 3)
    m = grammar.matcher()
    assert m.accept_string('["a","a","a"') and not m.accept_string(',"b"')  # a 4th: only unique, dead
    m = grammar.matcher()
    assert m.accept_string('["a","c",') and not m.accept_string('"c"')  # "c": only the unique reading
    assert_exact(schema, [["a", "a"], ["a", "a", "a"], ["a", "c"], ["a", "c", "a"], ["c", "c"], [1, 1],
                          ["a", "b", 1, "a"], ["ab", "ab"]])


@pytest.mark.parametrize("schema, instances", [
    # one terminal: a `[` of the same place opens a unique array or another one
    ({"type": "object", "properties": {
        "x": {"anyOf": [{"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                        {"type": "array", "items": {"type": "integer"}}]},
        "children": {"type": "array", "items": {"$ref": "#"}}}},
     [{"x": ["a", "a"]}, {"x": [1, 1]}, {"x": ["a", "b"]}, {"x": []},
      {"children": [{"x": ["b", "b"]}]}, {"children": [{"x": [2, 2]}, {"x": ["b", "c"]}]}]),
    # two readings: the unique array's terminal and the recursive branch's
    ({"anyOf": [{"type": "array", "items": {"$ref": "#"}},
                {"type": "array", "items": {"type": "string"}, "uniqueItems": True}]},
     [["a", "a"], ["a", "b"], [[], []], [["a", "a"]], [["a", "b"], ["a", "b"]], [[["a", "a"]]], []]),
])
def test_recursive_schemas_follow_both_readings(schema, instances):
    assert_exact(schema, instances)


def _load(path: Path):
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def travis():
    return compile_json_schema(_load(DATA / "schemastore" / "travis.json"), byte_vocab()), \
        _load(DATA / "schemastore" / "travis.json")


def _check(grammar, schema, instances, expected):
    validator = jsonschema.Draft7Validator(schema)
    for instance, valid in zip(instances, expected):
        assert validator.is_valid(instance) is valid, instance
        assert matcher_accepts(grammar, instance) is valid, instance


def test_travis_compiles_and_enforces_its_unique_arrays(travis):
    grammar, schema = travis
    assert grammar.unique is not None
    objects = [{"api_key": "k"}, {"api_key": "k"}]
    _check(grammar, schema, [
        {"notifications": {"pushover": ["a", "a"]}},  # oneOf branch 1: an array of strings, any
        {"notifications": {"pushover": objects}},  # branch 4: unique objects, a duplicate
        {"notifications": {"pushover": [objects[0], {"api_key": "j"}]}},
        {"import": ["a.yml", "a.yml"]},  # a unique array of imports
        {"import": ["a.yml", "b.yml"]},
    ], [True, False, True, False, True])


def test_gitlab_ci_compiles_and_enforces_exit_codes_outside_hidden_keys():
    schema = _load(DATA / "schemastore" / "gitlab-ci.json")
    grammar = compile_json_schema(schema, byte_vocab())
    job = {"script": "make", "retry": {"max": 1, "exit_codes": [1, 1]}}
    _check(grammar, schema, [
        {"build": job},  # a job's exit codes are unique
        {"build": {**job, "retry": {"max": 1, "exit_codes": [1, 2]}}},
        {".template": job},  # a hidden key: a job template, or any value
    ], [False, True, True])


def test_webpack_options_compile_and_any_entry_is_fine():
    schema = _load(DATA / "npm" / "WebpackOptions.json")
    grammar = compile_json_schema(schema, byte_vocab())
    # entry's anyOf has EntryDynamic, which JSON Schema reads as any value ('instanceof' is no keyword)
    _check(grammar, schema, [{"entry": ["./a.js", "./a.js"]}, {"entry": {"main": ["./a.js", "./a.js"]}},
                             {"entry": ["./a.js"], "mode": "production"}, {"mode": "fast"}],
           [True, True, True, False])


OPENS = lit(bytes([TAG]) + b"[")  # a unique array's start: the tag right before its bracket


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
