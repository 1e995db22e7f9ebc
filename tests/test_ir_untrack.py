"""Compiled IR leaves the cyclic collector's lists (`grammar/ir_untrack.py`): `untrack_tree` untracks
exactly the tuples and nodes reachable through tuples and nodes, what it untracks is still freed by
reference counting, the IR a compile keeps adds (almost) nothing to what a full collection walks, and
the compiled grammar matches as before."""
from __future__ import annotations

import gc
import json
import sys
import weakref
from pathlib import Path

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

import formwork.grammar.ir_untrack as ir_untrack  # noqa: E402
import formwork.grammar.json_schema.cache as schema_cache  # noqa: E402
from formwork.grammar._untrack import untrack_tree  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.ir import Grammar, Node, RuleRef, alt, lit, repeat, seq  # noqa: E402
from formwork.grammar.ir_chars import chars  # noqa: E402
from formwork.grammar.ir_untrack import untrack_ir  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402


def tracked_tree(root: object) -> set[int]:
    """Ids of the tracked tuples and nodes reachable from `root` through tuples and nodes."""
    found, pending = set(), [root]
    while pending:
        obj = pending.pop()
        if id(obj) in found or not isinstance(obj, (tuple, Node)) or not gc.is_tracked(obj):
            continue
        found.add(id(obj))
        pending.extend(gc.get_referents(obj))
    return found


# Fresh trees: letters drawn from a wide alphabet so most nodes are new, nested up to 4 deep.
leaves = st.builds(lit, st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=6)) | \
    st.builds(lambda lo, n: chars([(lo, chr(ord(lo) + n))]), st.sampled_from("aAk0"), st.integers(0, 5))
trees = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, min_size=2, max_size=4).map(lambda items: seq(*items)),
    st.lists(inner, min_size=2, max_size=4).map(lambda items: alt(*items)),
    st.tuples(inner, st.integers(0, 2), st.sampled_from([None, 3])).map(lambda t: repeat(t[0], t[1], t[2]))),
    max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(trees)
def test_untrack_tree_untracks_exactly_the_tracked_ir_below(tree):
    expected = tracked_tree(tree)
    assert untrack_tree(tree, Node) == len(expected)
    assert tracked_tree(tree) == set()
    assert untrack_tree(tree, Node) == 0  # idempotent: nothing left to untrack


class Box:
    """A node-like class whose instances can be weakly referenced (IR nodes cannot)."""

    __slots__ = ("items", "__weakref__")

    def __init__(self, *items: object) -> None:
        self.items = items


def test_untracked_objects_are_freed_by_reference_counting_and_other_containers_stay_tracked():
    inner_list = [Box()]
    leaf = Box()
    root = Box(Box(leaf, (leaf, 1)), inner_list)
    dead = weakref.ref(leaf)
    assert untrack_tree(root, Box) == 6  # three boxes, two items tuples and (leaf, 1)
    assert not gc.is_tracked(root) and not gc.is_tracked(leaf)
    assert gc.is_tracked(inner_list) and gc.is_tracked(inner_list[0])  # lists are not followed
    del root, leaf
    assert dead() is None  # no collection needed


def test_untrack_ir_takes_a_grammars_rule_bodies():
    body = seq(lit("x"), alt(lit("yy"), RuleRef("s")))
    grammar = Grammar({"s": alt(body, lit("zz")), "t": repeat(lit("ab"), 1, 3)}, "s")
    count = len(tracked_tree(grammar.rules["s"])) + len(tracked_tree(grammar.rules["t"]))
    assert count > 0 and untrack_ir(grammar) == count
    assert tracked_tree(grammar.rules["s"]) == set() == tracked_tree(grammar.rules["t"])


def distinct_schema(i: int) -> dict:
    """An object schema no other `i` shares: its own member names, a bounded string and an enum."""
    return {"type": "object", "required": [f"id{i}"],
            "properties": {f"id{i}": {"type": "integer", "minimum": i}, f"name_{i}_x": {"type": "string", "maxLength": 3 + i % 7},
                           f"kind{i}": {"enum": [f"a{i}", f"b{i}", i]}, f"tags{i}": {"type": "array", "items": {"type": "boolean"}}}}


def tracked_nodes() -> int:
    gc.collect()
    return sum(issubclass(type(obj), Node) for obj in gc.get_objects())


def nodes_kept_per_compile(compiler: GrammarCompiler, first: int, count: int) -> float:
    kept = []  # the grammars stay alive, as a cache or in-flight requests would keep them
    before = tracked_nodes()
    for i in range(first, first + count):
        kept.append(compile_json_schema(distinct_schema(i), byte_vocab(), compiler=compiler))
    return (tracked_nodes() - before) / count


def test_compiled_schemas_leave_their_ir_untracked(monkeypatch):
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False)
    nodes_kept_per_compile(compiler, 0, 5)  # the process-wide leaves and memos, once
    untracked = nodes_kept_per_compile(compiler, 1000, 40)
    monkeypatch.setattr(schema_cache, "untrack_ir", lambda lowered: 0)
    monkeypatch.setattr(ir_untrack, "untrack_tree", lambda value, kind: 0)  # the memos' own untracking too
    tracked = nodes_kept_per_compile(compiler, 2000, 40)
    assert tracked > 20  # the process-wide tables keep each schema's IR
    # What stays tracked: entries of bounded memos outside the compiled tree (a key prefix per member,
    # the regex of an integer range, the names' trie): 8 here, against 172 before untracking.
    assert untracked < 12, (untracked, tracked)


def accepts(grammar, doc: object) -> bool:
    matcher = grammar.matcher()
    return matcher.accept_string(json.dumps(doc, separators=(",", ":"))) and matcher.can_terminate()


def test_grammars_compiled_with_untracked_ir_match_as_the_schema_says():
    compiler = GrammarCompiler(byte_vocab(), cache_enabled=False)
    for i in (3, 4):
        schema = distinct_schema(i)
        grammar = compile_json_schema(schema, byte_vocab(), compiler=compiler)
        gc.collect()
        docs = [{f"id{i}": i + 1, f"name_{i}_x": "ab", f"kind{i}": f"b{i}", f"tags{i}": [True, False]},
                {f"id{i}": i}, {f"id{i}": i - 1}, {f"id{i}": i, f"kind{i}": i}, {f"id{i}": i, f"kind{i}": i + 1},
                {f"name_{i}_x": "ab"}, {f"id{i}": i, f"name_{i}_x": "abcdefghijk"}]
        for doc in docs:
            assert accepts(grammar, doc) == jsonschema.Draft202012Validator(schema).is_valid(doc), doc


def test_stored_masks_are_untracked_from_birth():
    import numpy as np

    from formwork.grammar.stored_mask import StoredMask

    words = np.zeros(64, dtype=np.int32)
    words[3] = 5
    sparse, dense = StoredMask.of(words), StoredMask.of(np.full(64, -1, dtype=np.int32))
    assert not gc.is_tracked(sparse) and not gc.is_tracked(dense)
    out = np.zeros((1, 64), dtype=np.int32)
    sparse.write(out, 0)
    assert (out[0] == words).all()
