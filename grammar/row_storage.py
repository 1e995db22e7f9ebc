"""The growable int32 rows of a lazy DFA (one row of next states per DFA state).

A lazy DFA grows while masks are computed: when a trie walk interns more states than the rows
hold, the rows are reallocated inside that mask.  Doubling a heap array copies every row built so
far into fresh pages (a 4,096-state automaton over 94 byte classes: 1.5 MB, about a millisecond of
page faults and copying, and twice that at each later doubling), so one mask of a long-lived
grammar would stall the whole batch.  Past `MAPPED_FROM_BYTES` the rows live in an anonymous
private mapping instead, which grows in place (`mremap`): no copy, and the new pages cost nothing
until rows are written into them.

A mapping cannot move while a NumPy view of it is alive, so the owner drops its own view before
`grow`; when some other view is still alive (a caller holding the rows across the growth) the rows
are copied into a new mapping, as a heap array would be.
"""
from __future__ import annotations

import mmap

import numpy as np

#: Rows smaller than this stay on the heap (most lexeme automata stay small).
MAPPED_FROM_BYTES = 1 << 18

_ROW_ITEM = np.dtype(np.int32).itemsize


class RowStorage:
    """The rows (`capacity` x `num_classes` int32, zeros where no row is built) and their growth."""

    def __init__(self, capacity: int, num_classes: int):
        self.num_classes = num_classes
        self.capacity = capacity
        self._heap: np.ndarray | None = np.zeros((capacity, num_classes), dtype=np.int32)
        self._map: mmap.mmap | None = None

    def rows(self) -> np.ndarray:
        """The rows as one writable array (a new view after each `grow`)."""
        if self._heap is not None:
            return self._heap
        return self._view(self._map, self.capacity)

    def grow(self, capacity: int) -> np.ndarray:
        """Room for `capacity` rows (the new ones zero), returned as `rows()`: the caller must have
        dropped its own arrays of the rows first, or the mapping is copied rather than grown."""
        if capacity <= self.capacity:
            return self.rows()
        nbytes = self._nbytes(capacity)
        if self._heap is not None:
            if nbytes < MAPPED_FROM_BYTES:
                grown = np.zeros((capacity, self.num_classes), dtype=np.int32)
                grown[: self.capacity] = self._heap
                self._heap = grown
            else:
                self._map = _anonymous_map(nbytes)
                self._view(self._map, self.capacity)[:] = self._heap
                self._heap = None
        else:
            try:
                self._map.resize(nbytes)  # in place: the new pages read as zeros
            except (AttributeError, BufferError, OSError, SystemError, ValueError):
                # a view still holds the mapping, or the platform cannot remap (no `resize` from
                # Python 3.15 where unsupported; SystemError on macOS): copy it over
                grown_map = _anonymous_map(nbytes)
                self._view(grown_map, self.capacity)[:] = self._view(self._map, self.capacity)
                self._map = grown_map
        self.capacity = capacity
        return self.rows()

    def _nbytes(self, capacity: int) -> int:
        return max(1, capacity * self.num_classes * _ROW_ITEM)

    def _view(self, mapped: mmap.mmap, capacity: int) -> np.ndarray:
        return np.frombuffer(mapped, dtype=np.int32, count=capacity * self.num_classes).reshape(
            capacity, self.num_classes)


def _anonymous_map(nbytes: int) -> mmap.mmap:
    """Private anonymous memory (zero pages until written); private, so `resize` may remap it."""
    return mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
