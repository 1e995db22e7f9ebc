"""`StepCollector`: no automatic full collection while installed, deferred ones run between steps
(when idle, or once enough young collections are pending), garbage is still freed, and the async
engine's thread and the offline `LLM` run them."""
from __future__ import annotations

import asyncio
import gc
import sys
import time
import weakref
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core import LLM  # noqa: E402
from formwork.core.async_engine import AsyncLLMEngine  # noqa: E402
from formwork.core.gc_policy import FULL_COLLECTIONS_OFF, STEP_COLLECTOR, StepCollector  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.grammar.gc_pause import paused_gc  # noqa: E402


class Node:
    """A cyclic object (only the cycle collector frees it)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def collector():
    got = StepCollector(max_deferred=20)
    got.install()
    yield got
    got.uninstall()


def full_collections() -> int:
    return gc.get_stats()[2]["collections"]


def cyclic_garbage_in_the_old_generation() -> weakref.ref:
    """A weak reference to a cycle that dies only in the old generation (where full collections look)."""
    gc.collect()
    holder = [Node()]
    gc.collect(1)  # the young collection moves the live cycle to the old generation
    dead = weakref.ref(holder.pop())
    gc.collect(1)
    assert dead() is not None  # a young collection does not see it
    return dead


def churn(rounds: int) -> list:
    """Allocate enough long-lived containers to trip many young collections."""
    kept = []
    for _ in range(rounds):
        kept.append([[] for _ in range(1000)])
    return kept


def test_install_turns_automatic_full_collections_off_and_uninstall_restores():
    before = gc.get_threshold()
    got = StepCollector()
    got.install()
    try:
        assert gc.get_threshold() == (before[0], before[1], FULL_COLLECTIONS_OFF)
        gc.collect()
        fulls = full_collections()
        kept = churn(300)  # 300k containers: dozens of young collections
        assert StepCollector.pending() > 20 and full_collections() == fulls
        del kept
    finally:
        got.uninstall()
    assert gc.get_threshold() == before and not got.installed


def test_without_the_policy_the_same_churn_runs_a_full_collection():
    """The workload of the test above does trip an automatic full collection (so that test can fail)."""
    gc.collect()
    fulls = full_collections()
    kept = churn(300)
    assert full_collections() > fulls
    del kept


def test_under_load_a_full_collection_waits_for_max_deferred_young_ones(collector):
    dead = cyclic_garbage_in_the_old_generation()
    while collector.pending() < collector.max_deferred - 1:
        gc.collect(1)
        assert not collector.between_steps(idle=False)
        assert dead() is not None
    gc.collect(1)
    assert collector.between_steps(idle=False)
    assert dead() is None and collector.pending() == 0
    assert collector.stats.forced == 1 and collector.stats.idle == 0 and collector.stats.longest > 0


def test_idle_runs_a_pending_full_collection_at_once(collector):
    dead = cyclic_garbage_in_the_old_generation()
    assert collector.between_steps(idle=True)
    assert dead() is None and collector.stats.idle == 1
    assert not collector.between_steps(idle=True)  # nothing pending: nothing to do


def test_not_installed_never_collects():
    dead = cyclic_garbage_in_the_old_generation()
    assert not StepCollector().between_steps(idle=True) and dead() is not None
    gc.collect()
    assert dead() is None


def test_garbage_stays_bounded_under_sustained_load(collector):
    """Cycles that die old, one per step, with a full collection only when the policy forces it:
    what waits is what died since the last forced one, not everything (3,000 without the policy)."""
    window: list[Node] = []
    refs = []
    most_alive = 0
    for step in range(3000):
        node = Node()
        node.payload = [[] for _ in range(200)]  # young collections come along with the steps
        window.append(node)
        refs.append(weakref.ref(node))
        if len(window) > 10:
            window.pop(0)  # dies after ten steps, often in the old generation
        collector.between_steps(idle=False)
        if step % 50 == 0:
            most_alive = max(most_alive, sum(r() is not None for r in refs))
    assert collector.stats.forced >= 3
    assert most_alive < 1500


def test_the_async_engine_collects_when_it_goes_idle():
    engine = AsyncLLMEngine(tiny_model_dir("llama"), block_size=4)
    STEP_COLLECTOR.install()
    idle_before = STEP_COLLECTOR.stats.idle  # the process's collector: earlier LLMs in this process count too
    try:
        dead = cyclic_garbage_in_the_old_generation()

        async def main():
            stream = engine.add_request("r", "Hello world", SamplingParams(max_tokens=4, ignore_eos=True))
            return [event async for event in stream]

        asyncio.run(main())
        deadline = time.monotonic() + 30
        while STEP_COLLECTOR.stats.idle == idle_before and time.monotonic() < deadline:  # right after the last step
            time.sleep(0.01)
        assert STEP_COLLECTOR.stats.idle == idle_before + 1 and dead() is None
    finally:
        STEP_COLLECTOR.uninstall()
        engine.shutdown()


def test_installed_grammar_constructions_promote_what_they_keep(collector):
    gc.collect()
    with paused_gc():
        kept = [[] for _ in range(5 * gc.get_threshold()[0])]
    assert id(kept) in {id(x) for x in gc.get_objects(generation=2)}
    collector.uninstall()
    gc.collect()
    with paused_gc():
        kept = [[] for _ in range(5 * gc.get_threshold()[0])]
    assert id(kept) not in {id(x) for x in gc.get_objects(generation=2)}


def test_installs_are_counted():
    before = gc.get_threshold()
    got = StepCollector()
    got.install()
    got.install()
    got.uninstall()
    assert got.installed and gc.get_threshold()[2] == FULL_COLLECTIONS_OFF
    got.uninstall()
    assert not got.installed and gc.get_threshold() == before
    got.uninstall()  # one too many: nothing to undo
    assert gc.get_threshold() == before


def full_collections_by_place(llm: LLM, monkeypatch) -> dict[str, int]:
    """Generate with steps that keep many new containers (enough to trip automatic full collections),
    and count the full collections that start inside a step and outside one."""
    kept: list = []
    counts = {"in step": 0, "outside": 0}
    in_step = [False]
    step = llm.engine.step

    def churning_step():
        in_step[0] = True
        try:
            kept.append(churn(30))
            return step()
        finally:
            in_step[0] = False

    def count(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            counts["in step" if in_step[0] else "outside"] += 1

    monkeypatch.setattr(llm.engine, "step", churning_step)
    gc.callbacks.append(count)
    try:
        llm.generate(["Hello world"] * 2, SamplingParams(max_tokens=24, ignore_eos=True), use_tqdm=False)
    finally:
        gc.callbacks.remove(count)
    return counts


def test_the_offline_llm_runs_full_collections_between_steps_only(monkeypatch):
    llm = LLM(tiny_model_dir("qwen2"), block_size=8)
    try:
        assert STEP_COLLECTOR.installed and gc.get_freeze_count() > 0  # as `formwork serve`: start_step_policy
        fulls_before = STEP_COLLECTOR.stats.forced + STEP_COLLECTOR.stats.idle
        dead = cyclic_garbage_in_the_old_generation()
        counts = full_collections_by_place(llm, monkeypatch)
        assert counts["in step"] == 0 and counts["outside"] >= 1, counts
        assert STEP_COLLECTOR.stats.forced + STEP_COLLECTOR.stats.idle > fulls_before
        assert dead() is None  # the garbage of before the generation is gone after it
    finally:
        llm.close()
    assert not STEP_COLLECTOR.installed and gc.get_threshold()[2] != FULL_COLLECTIONS_OFF


def test_without_the_policy_the_churning_steps_run_full_collections_inside(monkeypatch):
    """The workload of the test above lands automatic full collections in steps (so it can fail)."""
    llm = LLM(tiny_model_dir("qwen2"), block_size=8)
    llm.close()  # the policy uninstalled; the engine still generates (single process)
    counts = full_collections_by_place(llm, monkeypatch)
    assert counts["in step"] >= 1, counts


def test_a_backend_built_on_first_use_is_frozen_under_the_policy(monkeypatch):
    """The offline LLM builds its grammar backend on the first constrained request, after the start-up
    freeze; under the policy what the build made is frozen as it is built, so later full collections do not
    walk the vocabulary's tables (without the policy nothing is frozen). A fresh stand-in backend: the real
    one is built once per tokenizer and process."""
    import formwork.core.structured_output as structured

    class Tables:  # what a backend build leaves: containers the collector tracks
        def __init__(self):
            self.rows = [[i] for i in range(100)]

    monkeypatch.setattr(structured, "get_backend", lambda *args: Tables())

    def tracked(backend) -> bool:
        return any(obj is backend for obj in gc.get_objects())

    plain = structured.StructuredOutputManager(None, 100, [0], max_num_seqs=1)
    assert tracked(plain.backend)
    frozen = structured.StructuredOutputManager(None, 100, [0], max_num_seqs=1)
    STEP_COLLECTOR.install()
    try:
        backend = frozen.backend
        assert not tracked(backend) and backend is frozen.backend
    finally:
        STEP_COLLECTOR.uninstall()
        gc.unfreeze()
