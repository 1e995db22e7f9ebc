"""Where a terminal may end part way through a token: `Exits`, the trie nodes right after such a
place, indexed by their byte (found by the native walk, `native_walk.walk_into(want_exits=True)`),
interned per vocabulary trie so terminals that end alike share them and their continuations."""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

from formwork.grammar.token_trie import TokenTrie


def byte_set(flags: np.ndarray) -> int:
    """The bytes whose flag (one per byte value, 256) is set, as the bits of an int (fast to
    intersect)."""
    return int.from_bytes(np.packbits(np.asarray(flags, dtype=bool), bitorder="little").tobytes(), "little")


class Exits:
    """Where a terminal state may end before a token does: the children of those trie nodes
    (global node numbers; the first byte after the terminal), indexed by that byte."""

    def __init__(self, trie: TokenTrie, nodes: np.ndarray):
        self.trie = trie  # the trie the nodes belong to (the full one, or the slice's rest)
        nodes = np.sort(np.asarray(nodes, dtype=np.int64), kind="stable")  # canonical; found almost sorted
        byte = trie.flat_arrays[2][nodes]
        order = np.argsort(byte, kind="stable")  # (radix sort on bytes)
        self.node, self.byte = nodes[order], byte[order]
        self.byte_ptr = np.searchsorted(self.byte, np.arange(257))
        self.first_bytes = byte_set(np.diff(self.byte_ptr) > 0)
        self.next: dict = {}  # next terminal's start state key -> `Continuation` (cfg.continuations)

    def seeds(self, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, states): the children whose byte `row` (next state per byte) keeps alive, each
        with the state that byte leads to."""
        alive = np.flatnonzero(row[:256])
        lo, hi = self.byte_ptr[alive], self.byte_ptr[alive + 1]
        sizes = hi - lo
        sel = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))
        return self.node[sel], np.repeat(row[alive], sizes)


_EXITS_LOCK = threading.Lock()
_MAX_EXITS = 2048  # per vocabulary trie
_INTERNED: "weakref.WeakKeyDictionary[TokenTrie, OrderedDict]" = weakref.WeakKeyDictionary()


def interned_exits(trie: TokenTrie, nodes: np.ndarray) -> Exits:
    """`Exits(trie, nodes)`, one object per distinct set of nodes: terminals that end alike (every
    literal whose last byte is a space) share it, and so share its continuations."""
    exits = Exits(trie, nodes)
    key = (len(exits.node), hash(exits.node.tobytes()))
    with _EXITS_LOCK:
        table = _INTERNED.setdefault(trie, OrderedDict())
        got = table.get(key)
        if got is not None and np.array_equal(got.node, exits.node):
            table.move_to_end(key)
            return got
        table[key] = exits
        if len(table) > _MAX_EXITS:
            table.popitem(last=False)
    return exits
