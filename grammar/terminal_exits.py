"""Where a terminal may end part way through a token: `Exits`, the trie nodes right after such a
place (found by the native walk, `native_walk.walk_into(want_exits=True)`), interned per
vocabulary trie so terminals that end alike share them and their continuations."""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np

from formwork.grammar._trie_walk import exit_bytes
from formwork.grammar.token_trie import TokenTrie


def byte_set(flags: np.ndarray) -> int:
    """The bytes whose flag (one per byte value, 256) is set, as the bits of an int (fast to
    intersect)."""
    return int.from_bytes(np.packbits(np.asarray(flags, dtype=bool), bitorder="little").tobytes(), "little")


def ascending_once(nodes: np.ndarray) -> np.ndarray:
    """The distinct values of `nodes`, ascending (the walk hands them so per round: only nodes
    from several rounds are sorted, stably, which merges the runs; `np.unique` is far slower)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) > 1 and not (nodes[1:] > nodes[:-1]).all():
        nodes = np.sort(nodes, kind="stable")
        fresh = np.empty(len(nodes), dtype=bool)
        fresh[0] = True
        np.not_equal(nodes[1:], nodes[:-1], out=fresh[1:])
        nodes = nodes[fresh]
    return nodes


_FEW_BYTES = 4  # seeds of as many next bytes as this among ...
_MANY_EXITS = 1024  # ... as many exits as this are looked for byte by byte


class Exits:
    """Where a terminal state may end before a token does: the children of those trie nodes
    (global node numbers, ascending, each once; the first byte after the terminal) and their
    bytes."""

    __slots__ = ("trie", "node", "byte", "first_bytes", "next", "_at_byte")

    def __init__(self, trie: TokenTrie, nodes: np.ndarray, canonical: bool = False):
        self.trie = trie  # the trie the nodes belong to (the full one, or the slice's rest)
        self.node = nodes if canonical else ascending_once(nodes)  # canonical: ascending, each once
        spelled, first = exit_bytes(trie.walk_layout, np.ascontiguousarray(self.node, dtype=np.int64))
        self.byte = np.frombuffer(spelled, dtype=np.uint8)
        self.first_bytes = int.from_bytes(first, "little")
        self.next: dict = {}  # (next terminal's start state key, kept bytes) -> `Continuation` (cfg.continuations)
        self._at_byte: dict[int, np.ndarray] = {}  # byte -> where it is in `byte` (many exits only)

    def seeds(self, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, states): the children whose byte `row` (next state per byte) keeps alive, each
        with the state that byte leads to (ascending by node)."""
        row = np.asarray(row)
        if len(self.node) > _MANY_EXITS:
            alive = [b for b in np.flatnonzero(row[:256]).tolist() if self.first_bytes >> b & 1]
            if len(alive) <= _FEW_BYTES:  # look for those bytes only
                found = [self._where(b) for b in alive]
                at = np.sort(np.concatenate(found)) if found else np.zeros(0, dtype=np.intp)
                return self.node[at], row[self.byte[at]]
        states = row[self.byte]
        keep = states != 0
        return self.node[keep], states[keep]

    def _where(self, b: int) -> np.ndarray:
        """The positions of byte `b` among the exits (kept: next terminals often share a first
        byte, such as the space of " AS " and " FROM ")."""
        got = self._at_byte.get(b)
        if got is None:
            got = self._at_byte[b] = np.flatnonzero(self.byte == b)
        return got


_EXITS_LOCK = threading.Lock()
_MAX_EXITS = 2048  # per vocabulary trie
_INTERNED: "weakref.WeakKeyDictionary[TokenTrie, OrderedDict]" = weakref.WeakKeyDictionary()


def interned_exits(trie: TokenTrie, nodes: np.ndarray, canonical: bool = False) -> Exits:
    """`Exits(trie, nodes)`, one object per distinct set of nodes: terminals that end alike (every
    literal whose last byte is a space) share it, and so share its continuations.  `canonical`:
    the nodes are already ascending and each once (as one native call gives them)."""
    if not canonical:
        nodes = ascending_once(nodes)
    count = len(nodes)
    # a key in O(1) (hashing every node cost more than the walk); equal keys compare the nodes
    key = (count, int(nodes[0]), int(nodes[count // 2]), int(nodes[-1])) if count else (0,)
    with _EXITS_LOCK:
        table = _INTERNED.setdefault(trie, OrderedDict())
        got = table.get(key)
        if got is not None and (count < 2 or np.array_equal(got.node, nodes)):  # the key names 0 or 1 node
            table.move_to_end(key)
            return got
    exits = Exits(trie, nodes, canonical=True)
    with _EXITS_LOCK:
        table[key] = exits
        if len(table) > _MAX_EXITS:
            table.popitem(last=False)
    return exits
