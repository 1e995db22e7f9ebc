"""Generated schemas whose grammar nests past Python's default recursion limit compile (issue 21) and
the matcher agrees with jsonschema on instances along them.

A schema is a chain of `depth` levels (an object's required member, an array's items, an anyOf
beside a string, or a `$ref` into `$defs`) around an object of `width` optional integer members
(its member list nests ~5 IR levels a member, so 300 members nest ~1,600 deep), which may hold
the whole schema again (`$ref: "#"`: a context-free grammar).  The levels stay under the lowering's
own bound of 64 nested subschema combinations (`MAX_NESTED_SCHEMAS`, a typed refusal)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from json_exact import matcher_accepts  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

KINDS = ("object", "array", "any_of", "ref")


def deep_schema(kinds: list[str], width: int, recursive: bool) -> dict:
    """The schema of the module docstring: `kinds` outermost first."""
    members: dict[str, Any] = {f"p{i}": {"type": "integer"} for i in range(width)}
    if recursive:
        members["again"] = {"$ref": "#"}
    schema: dict[str, Any] = {"type": "object", "properties": members, "additionalProperties": False}
    defs: dict[str, Any] = {}
    for level, kind in reversed(list(enumerate(kinds))):
        if kind == "object":
            schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
        elif kind == "array":
            schema = {"type": "array", "items": schema}  # unbounded: a bound copies the item per place
        elif kind == "any_of":
            schema = {"anyOf": [{"type": "string"}, schema]}
        else:
            defs[f"level{level}"] = schema
            schema = {"$ref": f"#/$defs/level{level}"}
    return {"$defs": defs, **schema} if defs else schema


def instance(kinds: list[str], inner: Any) -> Any:
    """A value along the chain (outermost first) with `inner` at the bottom."""
    for kind in reversed(kinds):
        if kind == "object":
            inner = {"a": inner}
        elif kind == "array":
            inner = [inner]
    return inner


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict, list[Any]]:
    """A deep schema and instances along it: valid ones and one-place changes of them."""
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=40, max_size=60), label="kinds")
    width = draw(st.integers(150, 300), label="width")
    recursive = draw(st.booleans(), label="recursive")
    names = sorted(draw(st.sets(st.integers(0, width - 1), max_size=3)))
    bottom: dict[str, Any] = {f"p{i}": draw(st.integers(-5, 5)) for i in names}
    cut = draw(st.integers(0, len(kinds) - 1), label="cut")  # the chain cut short: a level's value missing
    return deep_schema(kinds, width, recursive), instances_along(kinds, width, recursive, bottom, cut)


def instances_along(kinds: list[str], width: int, recursive: bool, bottom: dict[str, Any], cut: int) -> list[Any]:
    """Instances along the chain: `bottom` at the bottom (valid), one-place changes of it, and
    the chain cut short after `cut` levels."""
    values = [bottom, {**bottom, "p0": "x"}, {**bottom, f"p{width}": 1}, "text", [bottom]]
    if recursive:
        values.append({**bottom, "again": instance(kinds, {})})
        values.append({"again": instance(kinds, {"again": "x"})})
    return [instance(kinds, v) for v in values] + [instance(kinds[:cut], bottom)]


def check(schema: dict, instances: list[Any]) -> None:
    """`schema` compiles under the default budgets, and the matcher agrees with jsonschema."""
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())  # the defaults
    grammar = compile_json_schema(schema, byte_vocab(), compiler=compiler, draft="2020-12")
    validator = jsonschema.Draft202012Validator(schema)
    verdicts = [(validator.is_valid(x), matcher_accepts(grammar, x)) for x in instances]
    assert all(expected == got for expected, got in verdicts), verdicts
    assert verdicts[0] == (True, True)  # the plain instance along the chain is valid


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_a_deep_generated_schema_compiles_and_agrees_with_jsonschema(case: tuple[dict, list[Any]]) -> None:
    check(*case)


@pytest.mark.parametrize("kind", KINDS)
def test_the_deepest_chains_of_one_kind_compile(kind: str) -> None:
    """60 levels of one kind around 300 members holding the schema again (each but `ref` was
    refused before as nesting too deeply)."""
    kinds = [kind] * 60
    check(deep_schema(kinds, 300, True), instances_along(kinds, 300, True, {"p1": 1, "p299": -2}, 30))
