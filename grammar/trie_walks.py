"""Trie walks for masks split at terminal boundaries: the walk of a terminal state (its live
nodes and where it may end before a token does: `Exits`), and the live descendants of given
nodes over the automaton after the terminal."""
from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict

import numpy as np

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.token_trie import TokenTrie

Level = tuple[int, np.ndarray, np.ndarray]  # (depth, local node indices, states * 256)
Nodes = tuple[int, np.ndarray]  # (depth, local node indices)

_SMALL_FRONTIER = 24
_DENSE_FRACTION = 0.2  # terminal walks: expand a whole level once this share of it may be live
_FOLLOW_NODES = 2048  # terminal walks follow a small frontier node by node when its subtrees are this small
_WIDE = 32  # ...filtering the children of a node in numpy when it has more than this


def _children(trie: TokenTrie, depth: int, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(children at depth + 1, how many children each node has)."""
    lo, hi = trie.child_lo[depth][nodes], trie.child_hi[depth][nodes]
    sizes = hi - lo
    return np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum())), sizes


def walk_below(trie: TokenTrie, dfa, seeds: list[Level], deadline: float | None) -> list[Level]:
    """Live descendants of the live seed nodes (with their automaton states * 256), level by level,
    the seeds included; seeds at the same depth may come in several pieces."""
    by_depth: dict[int, list[Level]] = {}
    for seed in seeds:
        if len(seed[1]):
            by_depth.setdefault(seed[0], []).append(seed)
    out: list[Level] = []
    if not by_depth:
        return out
    depth = min(by_depth)
    nodes = np.zeros(0, dtype=np.int64)
    states = np.zeros(0, dtype=np.intp)
    while depth < trie.max_depth:
        extra = by_depth.pop(depth, ())
        if extra:
            nodes = np.concatenate([nodes, *(n for _, n, _ in extra)])
            states = np.concatenate([states, *(st for _, _, st in extra)])
        if not len(nodes):
            if not by_depth:
                break
            depth = min(by_depth)  # nothing live in between: jump to the next seeds
            continue
        out.append((depth, nodes, states))
        if depth + 1 >= trie.max_depth:
            break
        if few_small_subtrees(trie, depth, nodes):
            out += descend(trie, dfa, depth, nodes.tolist(), states.tolist())  # no numpy levels
            nodes, states = nodes[:0], states[:0]
            if not by_depth:
                break
            depth = min(by_depth)
            continue
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        children, sizes = _children(trie, depth, nodes)
        if dfa.lazy:
            dfa.ensure(states >> 8)
        nxt = dfa.flat256()[np.repeat(states, sizes) + trie.level_bytes[depth + 1][children]]
        keep = nxt != 0
        nodes, states = children[keep], nxt[keep]
        depth += 1
    return out


def few_small_subtrees(trie: TokenTrie, depth: int, nodes: np.ndarray) -> bool:
    """Whether the live `nodes` at `depth` are few with small subtrees: cheaper to walk below them
    node by node in Python than level by level in numpy."""
    return len(nodes) <= _SMALL_FRONTIER and int(subtree_sizes(trie)[depth][nodes].sum()) <= _FOLLOW_NODES


def descend(trie: TokenTrie, dfa, depth: int, nodes: list[int], states: list[int]) -> list[Level]:
    """Live strict descendants of a few live nodes with small subtrees, walked in Python."""
    found: dict[int, tuple[list[int], list[int]]] = {}
    stack = list(zip([depth] * len(nodes), nodes, states))
    rows: dict[int, list[int]] = {}  # state * 256 -> its row
    child_lo, child_hi, level_bytes = trie.scalar_levels
    while stack:
        d, node, st = stack.pop()
        if d + 1 >= trie.max_depth:
            continue
        lo, hi = child_lo[d][node], child_hi[d][node]
        if lo == hi:
            continue
        row = rows.get(st)
        if row is None:
            dfa.ensure_one(st >> 8)
            row = rows[st] = dfa.flat256()[st: st + 256].tolist()
        if hi - lo > _WIDE:
            targets = dfa.flat256()[st + trie.level_bytes[d + 1][lo:hi]]
            hits = np.flatnonzero(targets)
            pairs = zip((hits + lo).tolist(), targets[hits].tolist())
        else:
            pairs = zip(range(lo, hi), map(row.__getitem__, level_bytes[d + 1][lo:hi]))
        for child, nxt in pairs:
            if nxt:
                got = found.setdefault(d + 1, ([], []))
                got[0].append(child)
                got[1].append(nxt)
                stack.append((d + 1, child, nxt))
    return [(d, np.asarray(n, dtype=np.int64), np.asarray(st, dtype=np.intp)) for d, (n, st) in found.items()]


def tokens_at(trie: TokenTrie, levels: list[Level]) -> np.ndarray:
    """Ids of the tokens ending at the given nodes."""
    if not levels:
        return np.zeros(0, dtype=np.int64)
    live = np.concatenate([nodes + trie.level_offset[d] for d, nodes, _ in levels])
    lo, hi = trie.end_ptr[live], trie.end_ptr[live + 1]
    sizes = hi - lo
    return trie.end_tokens[np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))]


def terminal_walk(trie: TokenTrie, dfa, state: int,
                  deadline: float | None = None) -> tuple[list[Nodes], list[Nodes]]:
    """(live nodes, exit children) of a terminal state, per depth: the trie nodes whose bytes stay
    alive from `state`, and the children of those reached in an accepting state (where the
    terminal may end before the token does; ending before the first byte is left out: a
    configuration with an accepting state holds the boundary after it as a hypothesis too).

    Level by level like the token-mask walk: a level is expanded whole (dead parents stay dead)
    while a large share of it may be live, else only the live nodes' children are; a few live
    nodes with small subtrees (a literal's prefixes, runs of spaces) are followed one by one.
    """
    live_out: list[Nodes] = []
    exit_out: list[Nodes] = []
    dfa.ensure_one(state)
    flat = dfa.flat256()
    states = flat[state * 256 + trie.level_bytes[0]]
    nodes: np.ndarray | None = None  # None: `states` covers the whole level
    for d in range(trie.max_depth):
        alive = states != 0
        live = np.flatnonzero(alive) if nodes is None else nodes[alive]
        states = states[alive]
        if not len(live):
            break
        live_out.append((d, live))
        if d + 1 >= trie.max_depth:
            break
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        if dfa.lazy:  # this level's rows: for the next level and for acceptance
            dfa.ensure(states >> 8)
        flat = dfa.flat256()
        ends = live[dfa.accepting[states >> 8]]
        if len(ends):
            children, _ = _children(trie, d, ends)
            if len(children):
                exit_out.append((d + 1, children))
        if few_small_subtrees(trie, d, live):
            _follow(trie, dfa, d, live.tolist(), states.tolist(), live_out, exit_out)
            break
        next_bytes = trie.level_bytes[d + 1]
        if len(live) >= _DENSE_FRACTION * len(next_bytes):
            full = np.zeros(len(trie.level_bytes[d]), dtype=states.dtype)
            full[live] = states
            states = flat[full[trie.parent[d + 1]] + next_bytes]
            nodes = None
        else:
            nodes, sizes = _children(trie, d, live)
            states = flat[np.repeat(states, sizes) + next_bytes[nodes]]
    return live_out, exit_out


def _follow(trie: TokenTrie, dfa, depth: int, nodes: list[int], states: list[int],
            live_out: list[Nodes], exit_out: list[Nodes]) -> None:
    """`terminal_walk` below a few live nodes with small subtrees (their own exits are recorded),
    one node at a time in plain Python: there, per-level numpy calls cost more."""
    found: dict[int, list[int]] = {}
    exits: dict[int, list[int]] = {}
    rows: dict[int, tuple[list[int], bool]] = {}  # state * 256 -> (its row, accepting)
    stack = list(zip([depth] * len(nodes), nodes, states))
    last = trie.max_depth - 1
    child_lo, child_hi, level_bytes = trie.scalar_levels
    while stack:
        d, node, st = stack.pop()
        if d >= last:
            continue
        lo, hi = child_lo[d][node], child_hi[d][node]
        if lo == hi:
            continue
        got = rows.get(st)
        if got is None:
            dfa.ensure_one(st >> 8)
            got = rows[st] = (dfa.flat256()[st: st + 256].tolist(), bool(dfa.accepting[st >> 8]))
        if hi - lo > _WIDE:  # many children (e.g. indentation followed by words): filter in numpy
            targets = dfa.flat256()[st + trie.level_bytes[d + 1][lo:hi]]
            hits = np.flatnonzero(targets)
            pairs = zip((hits + lo).tolist(), targets[hits].tolist())
        else:
            pairs = zip(range(lo, hi), map(got[0].__getitem__, level_bytes[d + 1][lo:hi]))
        for child, nxt in pairs:
            if nxt:
                found.setdefault(d + 1, []).append(child)
                stack.append((d + 1, child, nxt))
        if got[1] and d > depth:  # the start nodes' exits are recorded by the caller
            exits.setdefault(d + 1, []).extend(range(lo, hi))
    live_out += [(d, np.asarray(n, dtype=np.int64)) for d, n in sorted(found.items())]
    exit_out += [(d, np.asarray(n, dtype=np.int64)) for d, n in sorted(exits.items())]


_SUBTREE_SIZES: "weakref.WeakKeyDictionary[TokenTrie, list[np.ndarray]]" = weakref.WeakKeyDictionary()


def subtree_sizes(trie: TokenTrie) -> list[np.ndarray]:
    """Per depth, the number of nodes strictly below each node (computed once per trie)."""
    got = _SUBTREE_SIZES.get(trie)
    if got is None:
        sizes = [np.zeros(len(trie.level_bytes[-1]), dtype=np.int64)]
        for d in range(trie.max_depth - 2, -1, -1):
            sizes.append(np.bincount(trie.parent[d + 1], weights=sizes[-1] + 1,
                                     minlength=len(trie.level_bytes[d])).astype(np.int64))
        got = _SUBTREE_SIZES[trie] = sizes[::-1]
    return got


def byte_set(byte_values: np.ndarray) -> int:
    """A set of byte values as the bits of an int (fast to intersect)."""
    bits = np.zeros(256, dtype=np.uint8)
    bits[byte_values] = 1
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


class Exits:
    """Where a terminal state may end before a token does: the children of those trie nodes
    (the first byte after the terminal), indexed by that byte."""

    def __init__(self, trie: TokenTrie, found: list[Nodes]):
        self.trie = trie  # the trie the nodes belong to (the full one, or the slice's rest)
        if found:
            node = np.concatenate([n for _, n in found])
            depth = np.concatenate([np.full(len(n), d, dtype=np.int64) for d, n in found])
            byte = np.concatenate([trie.level_bytes[d][n] for d, n in found]).astype(np.int64)
        else:
            node = depth = byte = np.zeros(0, dtype=np.int64)
        order = np.argsort((byte * 256 + depth).astype(np.uint16), kind="stable")  # by byte, then depth (radix)
        self.node, self.depth, self.byte = node[order], depth[order], byte[order]
        self.byte_ptr = np.searchsorted(self.byte, np.arange(257))
        self.first_bytes = byte_set(np.flatnonzero(np.diff(self.byte_ptr)))  # as a bit set
        self.next: dict = {}  # next terminal's start state key -> `Continuation` (cfg.continuations)

    def seeds(self, row: np.ndarray) -> list[Level]:
        """Children whose byte `row` (next state * 256 per byte) keeps alive, grouped by depth."""
        alive = np.flatnonzero(row[: 256])
        lo, hi = self.byte_ptr[alive], self.byte_ptr[alive + 1]
        sizes = hi - lo
        total = int(sizes.sum())
        if not total:
            return []
        sel = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes) + np.arange(total)
        states = np.repeat(row[alive], sizes)
        depth = self.depth[sel]
        order = np.argsort(depth.astype(np.uint8), kind="stable")
        sel, states, depth = sel[order], states[order], depth[order]
        cuts = np.flatnonzero(np.diff(depth)) + 1
        return [(int(d[0]), n, st) for d, n, st in zip(np.split(depth, cuts), np.split(self.node[sel], cuts),
                                                        np.split(states, cuts))]


_EXITS_LOCK = threading.Lock()
_MAX_EXITS = 2048  # per vocabulary trie
_INTERNED: "weakref.WeakKeyDictionary[TokenTrie, OrderedDict]" = weakref.WeakKeyDictionary()


def interned_exits(trie: TokenTrie, found: list[Nodes]) -> Exits:
    """`Exits(trie, found)`, one object per distinct set of nodes: terminals that end alike (every
    literal whose last byte is a space) share it, and so share its continuations."""
    exits = Exits(trie, found)
    key = (len(exits.node), hash(exits.node.tobytes()), hash(exits.depth.tobytes()))
    with _EXITS_LOCK:
        table = _INTERNED.setdefault(trie, OrderedDict())
        got = table.get(key)
        if got is not None and np.array_equal(got.node, exits.node) and np.array_equal(got.depth, exits.depth):
            table.move_to_end(key)
            return got
        table[key] = exits
        if len(table) > _MAX_EXITS:
            table.popitem(last=False)
    return exits
