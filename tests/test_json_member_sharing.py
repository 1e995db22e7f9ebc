"""An object's member list builds each value once (`objects._MemberChain`): a declared member's
value serves the cell where it comes first and the one where a comma precedes it, the catch-all
member (additionalProperties / patternProperties) is built once however many cells reach it,
and an object value met under several keys that end alike (a patternProperties branch and
additionalProperties naming the same schema) is built once.  Sizes are document NFA states; the
language stays exact."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_exact import assert_exact  # noqa: E402

from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

VALUE = {"type": "object", "properties": {f"f{i}": {"type": "string", "maxLength": 40 + i} for i in range(12)}}
INT = {"type": "integer"}
CATCH_ALL = {  # each uses VALUE once, beside members far smaller than it
    "additional only": {"type": "object", "additionalProperties": VALUE},
    "declared, then additional": {"type": "object", "properties": {"a": INT, "b": INT},
                                  "additionalProperties": VALUE},
    "declared between others": {"type": "object", "properties": {"a": INT, "big": VALUE, "c": INT}},
    "pattern and additional": {"type": "object", "patternProperties": {"^[.]": {"anyOf": [VALUE, INT]}},
                               "additionalProperties": VALUE},
}


def _nfa_states(schema: dict) -> int:
    vocab = byte_vocab()
    return compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab, cache_enabled=False)).dfa.nfa.num_states


def test_optional_members_cost_about_what_required_ones_do():
    """12 optional members (each may come first or after a comma) against the same 12 required:
    each value is built once either way (it was twice when optional)."""
    required = {**VALUE, "required": list(VALUE["properties"])}
    assert _nfa_states(VALUE) <= 1.15 * _nfa_states(required)


def test_a_large_value_is_built_once_per_object():
    one = _nfa_states(VALUE)
    for name, schema in CATCH_ALL.items():
        assert _nfa_states(schema) <= 1.4 * one, name  # was 2 to 4 copies


def test_shared_members_stay_exact():
    value = {"f0": "x", "f3": "y"}
    instances = [{}, {"k": value}, {"k": value, "m": {}}, {"k": {"f0": 5}}, {"k": 1}, {".h": 3},
                 {".h": value, "k": value}, {".h": "s"}, {"a": 1, "z": value}, {"a": 1, "b": 2, "z": {"f1": "q"}},
                 {"a": "1"}, {"a": 1, "big": value, "c": 2}, {"big": {"f11": "w" * 52}}, {"big": {"f11": "w" * 51}}]
    for schema in CATCH_ALL.values():
        assert_exact(schema, instances)
    assert_exact({**CATCH_ALL["declared, then additional"], "minProperties": 2, "maxProperties": 3},
                 [{}, {"a": 1}, {"a": 1, "z": {}}, {"z": {}, "y": {}}, {"a": 1, "b": 2, "z": {}},
                  {"a": 1, "b": 2, "z": {}, "y": {}}, {"x": {}, "y": {}, "z": {}}, {"w": {}, "x": {}, "y": {}, "z": {}}])


def test_a_recursive_object_with_many_members_compiles():
    """Its member list becomes context-free grammar rules by a recursive walk, two shared marks a
    member deep: 150 members passed Python's recursion limit before (100 did not)."""
    members = {f"p{i}": {"$ref": "#/$defs/node"} if i % 7 == 0 else INT for i in range(150)}
    schema = {"$defs": {"node": {"type": "object", "properties": members}}, "$ref": "#/$defs/node"}
    assert_exact(schema, [{}, {"p0": {"p7": {}}, "p1": 1}, {"p0": {"p1": "x"}}, {"p149": 2, "p147": {}}])


def test_an_object_with_many_scalar_members_compiles():
    """Past `MAX_SHARED_TAKES` members only containers' members are shared: 300 scalar members
    build within the NFA builder's recursion limit (with every member shared, 200 did not)."""
    members = {f"p{i}": INT for i in range(300)}
    members["tags"] = {"type": "array", "items": {"type": "string"}}
    schema = {"type": "object", "properties": members}
    assert_exact(schema, [{}, {"p0": 1, "p299": 2}, {"p5": "x"}, {"p7": 1, "tags": ["a", "b"]}, {"tags": [3]}])
