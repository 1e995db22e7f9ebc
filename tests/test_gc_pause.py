"""`paused_gc`: nested and concurrent pauses are counted, the collector resumes after the last one
(also when a block raises), and stays off when it was off before."""
from __future__ import annotations

import gc
import threading

import pytest

from formwork.grammar.gc_pause import paused_gc


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
