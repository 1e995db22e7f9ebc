"""Packed token masks: one bit per token id in int32 words, the layout every engine uses."""
from __future__ import annotations

import numpy as np

_SCATTER_IDS = 1024  # from this many token ids on, pack them through a flag array


def pack_token_ids(token_ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """Packed int32 mask words with the given token bits set."""
    ids = np.asarray(token_ids, dtype=np.intp)
    words = np.zeros((vocab_size + 31) // 32, dtype=np.int32)
    packed = words.view(np.uint8)
    if len(ids) < _SCATTER_IDS:
        np.bitwise_or.at(packed, ids >> 3, np.left_shift(1, ids & 7).astype(np.uint8))
    else:
        flags = np.zeros(vocab_size, dtype=bool)
        flags[ids] = True
        bits = np.packbits(flags, bitorder="little")
        packed[: len(bits)] = bits
    return words


def unpack_token_ids(words: np.ndarray) -> np.ndarray:
    """The token ids whose bits are set in packed int32 mask words, ascending."""
    nonzero = np.flatnonzero(words)
    bits = np.unpackbits(words[nonzero].view(np.uint8), bitorder="little").reshape(-1, 32)
    rows, cols = np.nonzero(bits)
    return nonzero[rows] * 32 + cols
