"""A process-wide record of the kernel variants launched so far (see `launch`), in first-seen order.

The engine's warm-up launches every variant it can; a variant first seen after that is a request paying
a compile, which `VariantLog.watch` reports as a warning.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


class VariantLog:
    """Distinct variant keys, each with its launch count."""

    def __init__(self) -> None:
        self.launches: dict[tuple, int] = {}
        self.warn_new = False

    def record(self, key: tuple) -> None:
        count = self.launches.get(key)
        if count is None:
            if self.warn_new:
                logger.warning("kernel variant first launched after warm-up (compiles now): %s", key)
            self.launches[key] = 1
        else:
            self.launches[key] = count + 1

    def seen(self) -> frozenset[tuple]:
        return frozenset(self.launches)

    def watch(self) -> None:
        """From now on, log a warning for every variant not seen before (called after warm-up)."""
        self.warn_new = True


variant_log = VariantLog()
