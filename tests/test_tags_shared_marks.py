"""A recursive region body keeps its shared marks (`shared_nodes.share`) when the tags language
renames its rules (`tags.language`): rebuilt through `map_children`, the mark `repeat(x, 1, 1)`
became plain `x` and the NFA builder built one copy per path.  The body here is the recursive
diamond chain of `test_inline_shared_marks` ((x|y)^24 z under parentheses, 2^24 paths).  The
renaming walks without recursion, so a region nests as deep as a whole schema."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import jsonschema
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from test_inline_shared_marks import DEPTH, recursive  # noqa: E402

from formwork.grammar import compile_json_schema, compile_tags  # noqa: E402
from formwork.grammar.budget import CompileBudget  # noqa: E402
from formwork.grammar.errors import GrammarBudgetError  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.ir import Grammar, RuleRef, alt, lit, seq  # noqa: E402
from formwork.grammar.shared_nodes import is_shared, share  # noqa: E402
from formwork.grammar.tags import tags_language  # noqa: E402
from formwork.grammar.tags.language import Region  # noqa: E402

ORACLE = re.compile(rf"(\(*)(?:0|[xy]{{{DEPTH}}}z)(\)*)")  # one region's body, parentheses counted apart


def test_renamed_rules_keep_their_marks():
    mark = share(seq(lit("{"), RuleRef("body"), lit("}")))
    body = Grammar({"body": alt(lit("0"), mark)}, "body")
    language = tags_language([Region("<t>", "<t>", body, "</t>")], ["<t>"], free_text=False)
    renamed = language.rules["<tag 0>body"]
    assert renamed.items[0] == lit("0") and is_shared(renamed.items[1])
    assert renamed.items[1].item == seq(lit("{"), RuleRef("<tag 0>body"), lit("}"))


COMPILED: list[object] = []


@settings(deadline=None, max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3),
                          st.lists(st.sampled_from("xy"), min_size=DEPTH - 2, max_size=DEPTH + 1),
                          st.sampled_from(["z", "", "zz"])), min_size=1, max_size=3),
       st.sampled_from(["", " ", "\n"]))
def test_recursive_region_with_shared_marks_compiles_within_the_default_budget(regions, space):
    # fails without the marks kept: 2^24 paths need far more than the 500k NFA-state budget
    if not COMPILED:
        language = tags_language([Region("<t>", "<t>", recursive(), "</t>")], ["<t>"], free_text=False)
        COMPILED.append(GrammarCompiler(byte_vocab(), cache_enabled=False, budget=CompileBudget())
                        .compile_grammar(language))
    text = space.join(f"<t>{'(' * left}{''.join(steps)}{end}{')' * right}</t>"
                      for left, right, steps, end in regions)
    bodies = [ORACLE.fullmatch(f"{'(' * left}{''.join(steps)}{end}{')' * right}")
              for left, right, steps, end in regions]
    expected = all(m is not None and len(m.group(1)) == len(m.group(2)) for m in bodies)
    matcher = COMPILED[0].matcher(max_step_seconds=None)
    assert (matcher.accept_string(text) and matcher.can_terminate()) == expected


def _deep_node(members: int) -> dict:
    """A recursive object of `members` integer members and a `kid` of its own kind."""
    properties = {**{f"m{i}": {"type": "integer"} for i in range(members)}, "kid": {"$ref": "#/$defs/node"}}
    return {"$defs": {"node": {"type": "object", "properties": properties, "additionalProperties": False}},
            "$ref": "#/$defs/node"}


DEEP = _deep_node(200)
DEEP_COMPILED: list[object] = []


def _tags(schema: dict) -> dict:
    return {"tags": [{"begin": "<f>", "schema": schema, "end": "</f>"}], "triggers": ["<f>"]}


instances = st.recursive(
    st.dictionaries(st.sampled_from([f"m{i}" for i in range(0, 200, 7)] + ["other"]),
                    st.one_of(st.integers(-5, 5), st.just("s")), max_size=4),
    lambda kid: st.dictionaries(st.sampled_from(["m1", "m150", "kid"]), kid, min_size=1, max_size=2),
    max_leaves=4)


def _deep_compiled():
    if not DEEP_COMPILED:
        DEEP_COMPILED.append(compile_tags(_tags(DEEP), byte_vocab(),
                                          compiler=GrammarCompiler(byte_vocab(), cache_enabled=False)))
    return DEEP_COMPILED[0]


def test_a_recursive_object_of_200_members_compiles_in_a_region():
    # the rules were renamed by a recursive walk: > ~150 members was a RecursionError (outside
    # hypothesis, which runs a test under a higher recursion limit)
    matcher = _deep_compiled().matcher(max_step_seconds=None)
    assert matcher.accept_string('<f>{"m0": 1, "m199": 2, "kid": {"m5": 3}}</f>') and matcher.can_terminate()


@settings(deadline=None, max_examples=40)
@given(instances)
def test_a_recursive_object_of_200_members_in_a_region_agrees_with_jsonschema(instance):
    ordered = _in_order(instance)
    matcher = _deep_compiled().matcher(max_step_seconds=None)
    accepted = matcher.accept_string(f"<f>{json.dumps(ordered)}</f>") and matcher.can_terminate()
    assert accepted == jsonschema.Draft202012Validator(DEEP).is_valid(ordered)


def _in_order(value):
    """`value` with each object's members in the schema's order (the grammar's member order)."""
    if not isinstance(value, dict):
        return value
    rank = {f"m{i}": i for i in range(200)} | {"kid": 200}
    return {k: _in_order(value[k]) for k in sorted(value, key=lambda k: rank.get(k, -1))}


def test_too_deep_a_region_is_a_typed_refusal_like_the_whole_schema():
    # 300 members nest past Python's stack in the context-free lowering: a RecursionError leaked
    schema = _deep_node(300)
    outcomes = []
    for compile_ in (lambda: compile_json_schema(schema, byte_vocab(), compiler=GrammarCompiler(byte_vocab())),
                     lambda: compile_tags(_tags(schema), byte_vocab(), compiler=GrammarCompiler(byte_vocab()))):
        try:
            compile_()
            outcomes.append("compiled")
        except GrammarBudgetError:
            outcomes.append("refused")
    assert outcomes[0] == outcomes[1]
