"""`StepCollector(freeze_survivors=True)`: a deferred full collection freezes what survived it, so
the next one walks only what came since; frozen grammars and requests are still freed by reference
counting, and repeating a workload of compiles and requests under the policy keeps no more objects
(frozen or tracked) each round: nothing it makes dies in a cycle the freeze would keep."""
from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.gc_policy import StepCollector  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.grammar import GrammarCompiler, allocate_token_bitmask  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

TREE = {"$defs": {"node": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 4},
    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["name"], "additionalProperties": False}}, "$ref": "#/$defs/node"}


def schemas(count: int) -> list[dict]:
    """Distinct schemas: regular ones with their own property names, and the recursive TREE."""
    out: list[dict] = [TREE]
    for i in range(count - 1):
        out.append({"type": "object", "properties": {f"p{i}": {"type": "integer"}, f"q{i}x": {"type": "string"}},
                    "required": [f"p{i}"], "additionalProperties": False})
    return out


@pytest.fixture
def freezing():
    gc.collect()
    got = StepCollector(max_deferred=1, freeze_survivors=True)
    got.install()
    yield got
    got.uninstall()
    gc.unfreeze()  # back to the old generation: later tests see the heap as before


@pytest.fixture(scope="module")
def grammar_setup():
    vocab = byte_vocab()
    return vocab, GrammarCompiler(vocab, cache_enabled=False), allocate_token_bitmask(1, vocab.vocab_size)


def compile_and_step(grammar_setup, schema: dict, collector: StepCollector) -> weakref.ref:
    """Compile `schema`, walk a few mask steps with a full collection (and freeze) between them,
    drop the grammar; a weak reference to its automaton."""
    vocab, compiler, bitmask = grammar_setup
    grammar = compile_json_schema(schema, vocab, compiler=compiler)
    matcher = grammar.matcher()
    for byte in b'{"':
        matcher.fill_next_token_bitmask(bitmask)
        assert matcher.accept_token(byte)
        gc.collect(1)  # a young collection: the policy's full one is due (max_deferred 1)
        assert collector.between_steps(idle=False)
    return weakref.ref(grammar.dfa)


def objects_kept() -> int:
    """Objects the collector knows of: tracked ones and frozen ones."""
    gc.collect()
    return len(gc.get_objects()) + gc.get_freeze_count()


def quietest_round(kept: list[int]) -> int:
    """The smallest growth from one round to the next after the first.  What a cycle the freeze
    kept leaks comes back every round; a bounded cache of the process (other tests filled it too)
    may take a few entries in some round, but not in all."""
    return min(b - a for a, b in zip(kept[1:], kept[2:]))


def test_survivors_are_frozen_and_the_next_full_collection_skips_them(freezing):
    kept = [[] for _ in range(1000)]
    gc.collect(1)
    assert freezing.between_steps(idle=False)
    assert freezing.stats.frozen >= 1000 and gc.get_freeze_count() >= 1000
    walked = {id(o) for o in gc.get_objects()}
    assert id(kept) not in walked and not any(id(x) in walked for x in kept)
    del kept


def test_without_freeze_survivors_nothing_is_frozen():
    """The same step with the option off leaves the survivors tracked (so the test above can fail)."""
    gc.collect()
    got = StepCollector(max_deferred=1)
    got.install()
    try:
        frozen = gc.get_freeze_count()
        kept = [[] for _ in range(1000)]
        gc.collect(1)
        assert got.between_steps(idle=False)
        assert gc.get_freeze_count() == frozen and id(kept) in {id(o) for o in gc.get_objects()}
    finally:
        got.uninstall()


def test_frozen_grammars_still_die_by_reference_counting(freezing, grammar_setup):
    for schema in schemas(3):
        dead = compile_and_step(grammar_setup, schema, freezing)
        assert dead() is None


def test_compiles_of_distinct_schemas_keep_nothing_more_each_round(freezing, grammar_setup):
    """Each round compiles the same distinct schemas again (the process's caches filled by the
    first): a cycle the freeze kept would add its objects every round."""
    batch = schemas(12)
    kept = []
    for _ in range(5):
        for schema in batch:
            compile_and_step(grammar_setup, schema, freezing)
        kept.append(objects_kept())
    assert quietest_round(kept) <= 5, kept


def test_frozen_requests_die_and_requests_keep_nothing_more_each_round(freezing):
    engine = LLMEngine(tiny_model_dir("qwen2"), block_size=8)
    try:
        def run(request_id: str, params: SamplingParams) -> weakref.ref:
            engine.add_request(request_id, "Hello world", params)
            request = weakref.ref(engine.requests[request_id])
            while engine.has_unfinished_requests():
                engine.step()
                gc.collect(1)
                freezing.between_steps(idle=False)  # the request frozen while it runs
            return request

        plain = SamplingParams(max_tokens=6, ignore_eos=True)
        structured = SamplingParams(max_tokens=6, ignore_eos=True, structured_outputs={"json": {"type": "integer"}})
        kept = []
        for round_ in range(5):
            for k, params in enumerate((plain, structured)):
                dead = run(f"r{round_}-{k}", params)
                assert dead() is None
            kept.append(objects_kept())
        assert freezing.stats.forced > 0
        assert quietest_round(kept) <= 5, kept
    finally:
        engine.close()
