"""`paused_gc`: nested and concurrent pauses are counted, the collector resumes after the last one
(also when a block raises), and stays off when it was off before."""
from __future__ import annotations

import gc
import threading

import pytest

from formwork.grammar.gc_pause import collect_young_on_resume, paused_gc


def test_nested_pauses_resume_after_the_last():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_raising_block_still_resumes():
    with pytest.raises(ValueError):
        with paused_gc():
            raise ValueError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_concurrent_pauses_are_counted():
    inside, leave = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with paused_gc():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    with paused_gc():
        inside.wait()
    assert not gc.isenabled()  # the two threads still hold their pauses
    leave.set()
    for t in threads:
        t.join()
    assert gc.isenabled()


@pytest.fixture
def young_on_resume():
    collect_young_on_resume(True)
    yield
    collect_young_on_resume(False)


def made_in_a_pause(size: int) -> list:
    gc.collect()
    with paused_gc():
        return [[] for _ in range(size)]


def in_the_old_generation(objects: list) -> bool:
    old = {id(x) for x in gc.get_objects(generation=2)}
    return all(id(x) in old for x in objects)


def test_a_pause_that_held_back_a_collection_moves_what_it_kept_to_the_old_generation(young_on_resume):
    kept = made_in_a_pause(5 * gc.get_threshold()[0])
    assert gc.get_count()[0] < gc.get_threshold()[0]
    assert in_the_old_generation([kept, *kept[:: len(kept) // 10]])


def test_a_short_pause_leaves_the_young_generation_alone(young_on_resume):
    kept = made_in_a_pause(3)
    assert not in_the_old_generation([kept])


def test_off_by_default_the_young_generation_keeps_what_a_pause_made():
    kept = made_in_a_pause(5 * gc.get_threshold()[0])
    assert not in_the_old_generation([kept])


def test_a_finalizer_that_pauses_during_the_resume_collection_does_not_deadlock(young_on_resume):
    ran = []

    class PausesWhenFreed:
        def __init__(self) -> None:
            self.me = self  # a cycle: freed by the collection that the pause's end runs

        def __del__(self) -> None:
            with paused_gc():
                ran.append(gc.isenabled())

    gc.collect()
    with paused_gc():
        PausesWhenFreed()
        kept = [[] for _ in range(5 * gc.get_threshold()[0])]
    assert ran == [False] and gc.isenabled() and kept
