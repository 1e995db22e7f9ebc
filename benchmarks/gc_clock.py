"""The cyclic garbage collector's pauses in thread CPU time, for benchmarks that say how much of a
slow step was a collection that happened to land there."""
from __future__ import annotations

import gc
import time


class CollectorClock:
    """Every collection's generation, thread CPU and where it landed (`where`, set by the caller's
    loop), and the thread CPU of all collections so far (`seconds`)."""

    def __init__(self) -> None:
        self.where = "other"
        self.pauses: list[tuple[str, int, float]] = []
        self.seconds = 0.0
        self._since = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._since = time.thread_time()
        else:
            took = time.thread_time() - self._since
            self.pauses.append((self.where, info["generation"], took))
            self.seconds += took
