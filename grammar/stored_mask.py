"""Token masks as the mask cache keeps them: the words that differ from a shared dense base.

A 129k-token mask is 16 KB.  Most grammar states allow a handful of tokens (a key's next letters,
a comma), and a state inside a lexeme differs from the lexeme's own shared mask in a few words
(its exits), so a cache of dense copies spends its time and memory on fresh pages: every kept
mask is new memory the kernel must fault in.  A `StoredMask` keeps a read-only dense `base` that
others share (or none: all zeros) and the words where the mask differs from it (`_packed.c`).
"""
from __future__ import annotations

import numpy as np

from formwork.grammar._packed import diff_words, or_words, write_words
from formwork.grammar._untrack import untrack_tree

#: Keep a dense copy when more than this share of the words differ from the base.
DENSE_SHARE = 8
_EMPTY_AT = b""


class StoredMask:
    """A packed int32 mask: `base` (read-only dense words, or None for all zeros) with word
    `at[i]` (int64 bytes) replaced by `bits[i]` (int32 bytes)."""

    __slots__ = ("num_words", "base", "at", "bits")

    def __init__(self, num_words: int, base: np.ndarray | None, at: bytes = _EMPTY_AT, bits: bytes = _EMPTY_AT):
        self.num_words, self.base, self.at, self.bits = num_words, base, at, bits
        untrack_tree(self, StoredMask)  # it holds no container, so it is never on a cycle: the mask
        # cache's 4,096 masks need not be walked by every full collection

    @classmethod
    def of(cls, words: np.ndarray, base: np.ndarray | None = None, owned: bool = False) -> "StoredMask":
        """The mask `words` kept against `base` (a shared read-only mask it should mostly agree
        with); a dense copy (or `words` itself when `owned`) where too many words differ."""
        diff = diff_words(words, base, len(words) // DENSE_SHARE)
        if diff is not None:
            return cls(len(words), base, *diff)
        dense = words if owned else words.copy()
        dense.flags.writeable = False
        return cls(len(words), dense)

    @classmethod
    def over(cls, scratch: np.ndarray, base: np.ndarray | None) -> "StoredMask":
        """The mask `base | scratch` kept against `base`, leaving `scratch` (a writable buffer of
        the tokens beyond `base`) all zero."""
        diff = diff_words(scratch, base, len(scratch) // DENSE_SHARE, True, True)
        if diff is not None:
            return cls(len(scratch), base, *diff)
        dense = scratch | base if base is not None else scratch.copy()
        dense.flags.writeable = False
        scratch.fill(0)
        return cls(len(scratch), dense)

    def write(self, out: np.ndarray, row: int) -> None:
        """Write the mask into row `row` of `out` (a C-contiguous int32 (rows, words) array)."""
        write_words(out, row, self.num_words, self.base, self.at, self.bits)

    def dense(self) -> np.ndarray:
        """The packed words (read-only; the shared base itself when nothing differs)."""
        if not self.at and self.base is not None:
            return self.base
        out = np.empty((1, self.num_words), dtype=np.int32)
        self.write(out, 0)
        words = out[0]
        words.flags.writeable = False
        return words

    def or_into(self, words: np.ndarray) -> None:
        """OR the mask into `words` (writable packed words)."""
        or_words(words, self.at, self.bits, self.base)
