"""Pause the cyclic garbage collector while automata are built.

Construction allocates many small containers (sets, lists, tuples) and frees few, so the
collector's generational passes re-scan a growing heap for nothing; pausing it during
construction roughly halves compile time in a process that holds many compiled grammars.
Nested and concurrent pauses are counted; the collector resumes when the last one ends.

`collect_young_on_resume(True)` (the serving policy, `core.gc_policy`, turns it on): if the pause held
back a young collection, the last one to end runs it at once over both young generations, so what
construction kept moves to the old generation in one pass charged to the construction, instead of
sitting in the middle generation until a later generation-1 collection re-scans it inside whatever
mask step trips it (5-10 ms after a few compiles, the slowest masks left on iglu-central).  Off by
default: each such collection counts towards the next automatic full one, which would then land in
a mask step more often; the serving policy runs full collections between steps instead.
"""
from __future__ import annotations

import gc
import threading


class _PausedGC:
    """The reentrant pause (a plain class: a generator-based context manager costs a few µs
    per use, and a compile enters several)."""

    __slots__ = ()
    _lock = threading.Lock()
    _depth = 0
    _was_enabled = False
    _young_on_resume = False

    def __enter__(self) -> None:
        cls = _PausedGC
        with cls._lock:
            if cls._depth == 0:
                cls._was_enabled = gc.isenabled()
                gc.disable()
            cls._depth += 1

    def __exit__(self, *exc: object) -> None:
        cls = _PausedGC
        with cls._lock:
            cls._depth -= 1
            resumed = cls._depth == 0 and cls._was_enabled
            held_back = resumed and cls._young_on_resume and gc.get_count()[0] > gc.get_threshold()[0]
            if resumed:
                gc.enable()
        if held_back:  # outside the lock: the collection may run finalizers that pause again
            gc.collect(1)


_PAUSE = _PausedGC()


def paused_gc() -> _PausedGC:
    """`with paused_gc(): ...` runs the block with the collector paused (see the module doc)."""
    return _PAUSE


def collect_young_on_resume(enabled: bool) -> None:
    """Whether the last pause to end runs the young collection it held back (see the module doc)."""
    _PausedGC._young_on_resume = enabled
