"""Compile budgets hold in every phase: Grafana Loki's configuration schema (many shared `$ref`s
into large `anyOf`s) and a generated schema of that shape return within their budget, and with
fake clocks a compile past its budget (CPU time, the wall backstop, or a cancel) stops at its next
check whatever phase it is in."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formwork.grammar import CompileBudget, GrammarBudgetError, GrammarCompiler, Vocabulary
from formwork.grammar.budget import CompileCancelledError, active_budget
from formwork.grammar.dfa import minimize
from formwork.grammar.json_schema import compile_json_schema

LOKI = Path(__file__).parent / "data" / "real_schemas" / "loki.schema.json"
VOCAB = Vocabulary([bytes([b]) for b in range(256)] + [None], stop_token_ids=[256])


def shared_refs_schema(depth: int, width: int) -> dict:
    """Loki's shape: each definition an `anyOf` of `width` constants, the next definition, and an
    object whose two properties refer to the next definition again (3^depth paths through shared
    subschemas); the last definition recurses to the root."""
    defs = {}
    for i in range(depth):
        nxt = {"$ref": f"#/$defs/d{i + 1}"}
        defs[f"d{i}"] = {"anyOf": [nxt, {"type": "object", "properties": {"a": nxt, "b": nxt}},
                                   *({"const": f"v{i}_{k}"} for k in range(width))]}
    defs[f"d{depth}"] = {"type": "array", "items": {"$ref": "#"}}
    return {"$defs": defs, "type": "object", "properties": {"root": {"$ref": "#/$defs/d0"}}}


def _compile(schema: dict, budget: CompileBudget):
    return compile_json_schema(schema, VOCAB, compiler=GrammarCompiler(VOCAB, cache_enabled=False, budget=budget))


def test_loki_schema_returns_within_its_budget():
    schema = json.loads(LOKI.read_text())
    start = time.thread_time()
    try:
        _compile(schema, CompileBudget(max_seconds=10.0))
    except GrammarBudgetError:
        pass  # refused is fine; running on past the budget is not
    assert time.thread_time() - start <= 11.0


def test_shared_refs_schema_compiles_and_is_enforced():
    start = time.thread_time()
    grammar = _compile(shared_refs_schema(16, 12), CompileBudget(max_seconds=10.0))
    assert time.thread_time() - start <= 11.0
    for text, ok in [('{"root": "v0_3"}', True), ('{"root": {"a": "v1_11", "b": {"a": "v2_0"}}}', True),
                     ('{"root": "v15_3"}', True), ('{"root": [{"root": "v4_0"}]}', True),
                     ('{"root": "v0_12"}', False), ('{"root": "v16_0"}', False), ('{"root": {"a": 1}}', False)]:
        assert grammar.matcher().accept_string(text) is ok, text


def _fake_clocks(mode: str, crossing: int):
    """(cpu clock, wall clock, reads): the clocks stand still until their `crossing`-th read in
    all, then the chosen one jumps far past any budget (or the compile is cancelled)."""
    reads = [0]

    def tick() -> float:
        reads[0] += 1
        past = reads[0] > crossing
        if past and mode == "cancel":
            active_budget().cancel()
            return 0.0
        return 1e9 if past else 0.0

    def cpu() -> float:
        return tick() if mode == "cpu" else 0.0

    def wall() -> float:
        return tick() if mode != "cpu" else 0.0

    return cpu, wall, reads


EXPECTED = {"cpu": "exceeded its time budget", "wall": "too little progress", "cancel": "was cancelled"}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depth=st.integers(2, 8), width=st.integers(1, 16), crossing=st.integers(1, 400),
       mode=st.sampled_from(sorted(EXPECTED)))
def test_random_budgets_stop_at_the_next_check(depth, width, crossing, mode):
    cpu, wall, reads = _fake_clocks(mode, crossing)
    budget = CompileBudget(max_seconds=1.0, cpu_clock=cpu, wall_clock=wall)
    try:
        _compile(shared_refs_schema(depth, width), budget)
    except GrammarBudgetError as exc:
        assert EXPECTED[mode] in str(exc)
        assert isinstance(exc, CompileCancelledError) is (mode == "cancel")
        assert crossing < reads[0] <= crossing + 3  # the check that saw it (and at most a native loop's)
    else:  # the compile finished before its clock ran out (or was cancelled after its last check)
        assert reads[0] <= crossing + (mode == "cancel")


def _phases(schema: dict, step: int) -> set[str]:
    """The phases named by the budget errors of compiles whose clock runs out at its 1st, (1+step)th,
    ... read, up to the first crossing the compile outlives (a failed compile keeps none of its
    automata, so each of these does the same work)."""
    out = set()
    for crossing in range(1, 10**6, step):
        cpu, wall, _ = _fake_clocks("cpu", crossing)
        try:
            _compile(schema, CompileBudget(max_seconds=1.0, cpu_clock=cpu, wall_clock=wall))
        except GrammarBudgetError as exc:
            assert "time budget" in str(exc)
            out.add(re.sub(r".* during ", "", str(exc)))
        else:
            return out
    raise AssertionError("the compile never finished")


def test_every_phase_checks_the_budget():
    assert {"expanding $ref/allOf/anyOf/oneOf", "lowering the schema", "finding rule references",
            "building the context-free grammar", "building the Earley tables",
            "building the Earley parser"} <= _phases(shared_refs_schema(5, 3), 1)
    product = {"allOf": [{"type": "string", "pattern": "^c.*"}, {"pattern": ".*v$"}]}
    assert {"NFA construction", "subset construction", "automaton product"} <= _phases(product, 1)


def test_minimisation_stops_when_the_compile_runs_out_of_time():
    n = 20_000  # a chain: every state is its own block, so the refinement takes thousands of steps
    table = np.stack([np.minimum(np.arange(n) + 1, n - 1), np.full(n, n - 1)], axis=1).astype(np.int32)
    accepting = np.zeros(n, dtype=bool)
    accepting[-1] = True
    class_of_byte = np.ones(256, dtype=np.int64)
    class_of_byte[ord("a")] = 0
    with CompileBudget(max_seconds=0.0).active():
        with pytest.raises(GrammarBudgetError, match="time budget of 0 s during DFA minimisation"):
            minimize(table, accepting, 0, class_of_byte)
    assert minimize(table, accepting, 0, class_of_byte).num_states > 2  # no compile running: no deadline
