"""What a request or a grammar leaves dies by reference counting, with the cycle collector off:
a finished request (its sequences, detokenizers, structured-output state) and a dropped
context-free grammar after mask steps (its configuration automaton and masks).  Cycles there
would wait for a full collection, which the serving policy defers (`core.gc_policy`)."""
from __future__ import annotations

import gc
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.grammar import GrammarCompiler, allocate_token_bitmask  # noqa: E402
from formwork.grammar.cfg.configs import ConfigDFA  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

TREE = {"$defs": {"node": {"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 4},
    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["name"], "additionalProperties": False}}, "$ref": "#/$defs/node"}


@contextmanager
def collector_off() -> Iterator[None]:
    """No collection of any generation runs in the block."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def cyclic_garbage(make) -> list[str]:
    """The types of what `make()` leaves in reference cycles (collected with `gc.DEBUG_SAVEALL`)."""
    with collector_off():
        make()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            return sorted({type(o).__qualname__ for o in gc.garbage})
        finally:
            gc.set_debug(0)
            gc.garbage.clear()


def test_a_dropped_recursive_grammar_dies_by_reference_counting():
    vocab = byte_vocab()
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)

    def use() -> weakref.ref:
        grammar = compile_json_schema(TREE, vocab, compiler=compiler)
        automaton = grammar.dfa
        assert isinstance(automaton, ConfigDFA)  # the context-free path, whose masks once pointed back at it
        matcher = grammar.matcher()
        for byte in b'{"name":"a","kids":[{"name":"b"}]}':
            matcher.fill_next_token_bitmask(bitmask)
            assert matcher.accept_token(byte)
        matcher.fill_next_token_bitmask(bitmask)
        assert matcher.accept_token(256)
        return weakref.ref(automaton)

    with collector_off():
        dead = use()
        assert dead() is None
    assert cyclic_garbage(use) == []


@pytest.fixture(scope="module")
def engine():
    got = LLMEngine(tiny_model_dir("qwen2"), block_size=8)
    yield got
    got.close()


@pytest.mark.parametrize("structured", [False, True], ids=["plain", "json"])
def test_a_finished_request_dies_by_reference_counting(engine, structured):
    params = SamplingParams(max_tokens=6, ignore_eos=True, structured_outputs={"json": {"type": "integer"}}
                            if structured else None)

    def run(request_id: str) -> weakref.ref:
        engine.add_request(request_id, "Hello world", params)
        request = weakref.ref(engine.requests[request_id])
        while engine.has_unfinished_requests():
            engine.step()
        return request

    run("warm")  # the engine's own lasting state (caches, buffers) is made first
    with collector_off():
        dead = run("r")
        assert dead() is None
    assert cyclic_garbage(lambda: run("again")) == []
