"""When the cyclic garbage collector's full collections run in a serving process.

A full (generation-2) collection walks every tracked object the process holds outside the frozen
start-up heap: the compiled grammars and their caches, 30-170 ms of CPU after a few hundred schemas.
Left automatic it lands in whatever step allocates when its threshold trips (every request in the
batch waits; on the real corpora every mask over 5 ms was one).  `StepCollector` turns automatic
full collections off and runs them where no step waits: when the engine is idle, or, under sustained
load, between two steps once `max_deferred` young (generation-1) collections have promoted objects
since the last full one, which bounds how much cyclic garbage can wait.  Young collections stay
automatic: they walk only the objects made since the last one; and what a grammar construction keeps
goes to the old generation as the construction ends (`gc_pause.collect_young_on_resume`), not at a
generation-1 collection inside a later mask step.

With `freeze_survivors`, each deferred full collection then freezes what survived it (`gc.freeze`), so
the next one walks only what survived since (the grammars compiled and the requests in flight since),
not every grammar the process holds.  What is frozen is still freed by reference counting; only a
reference cycle that dies frozen is never freed.  Compiled grammars and finished requests leave none
(tests/test_gc_refcount.py), but code outside the engine (a server's handlers) may, so it is opt-in.
"""
from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass

from formwork.grammar.gc_pause import collect_young_on_resume

FULL_COLLECTIONS_OFF = 2**31 - 1  # a generation-2 threshold the collector never reaches
DEFAULT_MAX_DEFERRED = 100  # generation-1 collections (each promotes ~700 x 10 allocations) per forced full one


@dataclass
class FullCollections:
    """What the deferred full collections cost so far (thread CPU seconds)."""

    idle: int = 0
    forced: int = 0
    seconds: float = 0.0
    longest: float = 0.0
    frozen: int = 0  # objects frozen after the last one (`freeze_survivors`)


class StepCollector:
    """Automatic full collections off while installed; `between_steps` runs them (see the module doc).

    Process-wide: install one, from the thread that drives the engine."""

    def __init__(self, max_deferred: int = DEFAULT_MAX_DEFERRED, freeze_survivors: bool = False) -> None:
        if max_deferred < 1:
            raise ValueError(f"max_deferred must be at least 1, got {max_deferred}")
        self.max_deferred = max_deferred
        self.freeze_survivors = freeze_survivors
        self.stats = FullCollections()
        self._saved: tuple[int, int, int] | None = None
        self._installs = 0
        self._lock = threading.Lock()

    @property
    def installed(self) -> bool:
        return self._saved is not None

    def install(self) -> None:
        """Stop automatic full collections (young ones keep their thresholds); grammar constructions
        promote what they keep as they end.  Counted: each install wants its own uninstall."""
        with self._lock:
            if self._saved is None:
                self._saved = gc.get_threshold()
                gc.set_threshold(self._saved[0], self._saved[1], FULL_COLLECTIONS_OFF)
                collect_young_on_resume(True)
            self._installs += 1

    def uninstall(self) -> None:
        """Give the collector back its own thresholds (at the last uninstall)."""
        with self._lock:
            self._installs = max(0, self._installs - 1)
            if self._saved is not None and self._installs == 0:
                gc.set_threshold(*self._saved)
                collect_young_on_resume(False)
                self._saved = None

    @staticmethod
    def pending() -> int:
        """Generation-1 collections since the last full one (each may have promoted garbage)."""
        return gc.get_count()[2]

    def between_steps(self, idle: bool) -> bool:
        """Run a full collection now if one is due: anything pending while `idle`, or
        `max_deferred` generation-1 collections under load.  Returns whether it ran."""
        pending = self.pending()
        if not self.installed or pending == 0 or (not idle and pending < self.max_deferred):
            return False
        start = time.thread_time()
        gc.collect()
        if self.freeze_survivors:
            gc.freeze()
            self.stats.frozen = gc.get_freeze_count()
        took = time.thread_time() - start
        stats = self.stats
        if idle:
            stats.idle += 1
        else:
            stats.forced += 1
        stats.seconds += took
        stats.longest = max(stats.longest, took)
        return True


STEP_COLLECTOR = StepCollector()  # the process's own (`start_step_policy` installs it)


def freeze_startup_heap() -> int:
    """Move every object alive after start-up (modules, the model, the tokenizer, its grammar
    tables) out of the cycle collector's reach: they live as long as the process, and a full
    collection re-scanning them (hundreds of ms with torch and transformers loaded) would stall
    whatever step it lands in.  Returns how many objects were frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def freeze_process_tables() -> bool:
    """Freeze what is alive now when the step policy is installed (the start-up heap is frozen): for
    tables built on first use that then live as long as the process, such as a tokenizer's grammar
    backend (`formwork serve` builds it before its freeze; the offline `LLM` on its first constrained
    request), which every later full collection would otherwise walk (~10 ms each for a 129k vocabulary).
    Returns whether it froze."""
    if not STEP_COLLECTOR.installed:
        return False
    freeze_startup_heap()
    return True


def start_step_policy() -> int:
    """What a process that drives an engine does once loaded (`formwork serve`, a data-parallel
    replica, the offline `LLM`): freeze the start-up heap and install `STEP_COLLECTOR`, whose
    `between_steps` the step loop then calls (undo the install with `STEP_COLLECTOR.uninstall()`).
    Returns how many objects are frozen."""
    frozen = freeze_startup_heap()
    STEP_COLLECTOR.install()
    return frozen
