"""The vocabulary as a byte trie laid out level by level in numpy arrays.

Nodes at depth d are the distinct (d+1)-byte prefixes of the tokens, in sorted order;
the children of a node at depth d are a contiguous slice of depth d+1.  The mask walk reads it
through `flat_arrays`, over global node numbers (see native_walk.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np

from formwork.grammar._trie_walk import layout


class TokenTrie:
    """Level arrays: `level_bytes[d]`, `parent[d]` (index into level d-1), `child_lo[d]` /
    `child_hi[d]` (slice of level d+1), `level_offset[d]` (global index of the level's first node).

    `token_node[id]` is the global index of the node where token `id` ends; ids that
    are not text (special, empty, padding) point at `num_nodes`, a node that is never live.
    """

    def __init__(self, token_bytes: Sequence[bytes | None], width: int):
        text_ids = [i for i, b in enumerate(token_bytes) if b]
        pieces = [token_bytes[i] for i in text_ids]
        # fixed-width byte strings sort lexicographically (NUL padding only ties a token with
        # its NUL-extended twin, which at worst duplicates a trie node)
        order = np.argsort(np.array(pieces, dtype=bytes), kind="stable") if pieces else np.zeros(0, int)
        order_list = order.tolist()
        ids = [text_ids[k] for k in order_list]
        sorted_pieces = [pieces[k] for k in order_list]
        lens = np.fromiter(map(len, sorted_pieces), dtype=np.int64, count=len(ids))
        n = len(ids)
        max_len = int(lens.max()) if n else 0
        self.max_depth = max_len
        matrix = np.zeros((n, max(max_len, 1)), dtype=np.uint8)
        if n:
            flat = np.frombuffer(b"".join(sorted_pieces), dtype=np.uint8)
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            rows = np.repeat(np.arange(n), lens)
            cols = np.arange(len(flat)) - np.repeat(starts, lens)
            matrix[rows, cols] = flat
        lcp = self._lcp(matrix, lens)

        self.level_bytes: list[np.ndarray] = []
        self.parent: list[np.ndarray] = []
        self.child_lo: list[np.ndarray] = []
        self.child_hi: list[np.ndarray] = []
        self.level_offset: list[int] = []
        token_node = np.full(width, -1, dtype=np.int64)
        ids_arr = np.array(ids, dtype=np.int64)
        offset = 0
        prev_node_of_token: np.ndarray | None = None
        prev_members: np.ndarray | None = None
        for d in range(max_len):
            members = np.flatnonzero(lens > d)  # sorted token rows still long enough
            new = lcp[members] <= d
            node_of_member = np.cumsum(new) - 1
            first_rows = members[new]
            self.level_bytes.append(matrix[first_rows, d].astype(np.int64))
            self.level_offset.append(offset)
            if d == 0:
                self.parent.append(np.zeros(len(first_rows), dtype=np.int64))
            else:
                # parent (depth d-1 node) of each depth-d node, via its first token
                pos = np.searchsorted(prev_members, first_rows)
                parents = prev_node_of_token[pos]
                self.parent.append(parents)
                num_prev = len(self.level_bytes[d - 1])
                self.child_lo.append(np.searchsorted(parents, np.arange(num_prev), side="left"))
                self.child_hi.append(np.searchsorted(parents, np.arange(num_prev), side="right"))
            ends = lens[members] == d + 1
            token_node[ids_arr[members[ends]]] = offset + node_of_member[ends]
            offset += len(first_rows)
            prev_node_of_token, prev_members = node_of_member, members
        if max_len:
            last = len(self.level_bytes[-1])
            self.child_lo.append(np.zeros(last, dtype=np.int64))
            self.child_hi.append(np.zeros(last, dtype=np.int64))
        self.num_nodes = offset
        token_node[token_node < 0] = offset
        self.token_node = token_node
        # inverse map, node -> the token ids ending there (CSR)
        text = np.flatnonzero(token_node < offset)
        order = text[np.argsort(token_node[text], kind="stable")]
        self.end_tokens = order
        self.end_ptr = np.searchsorted(token_node[order], np.arange(offset + 1))

    @cached_property
    def flat_arrays(self) -> tuple[np.ndarray, ...]:
        """(child_lo, child_hi, byte, end_ptr, end_tokens) over global node numbers, int32 (byte:
        uint8): node `num_nodes` is the root, whose children are depth 0."""
        n = self.num_nodes
        child_lo = np.zeros(n + 1, dtype=np.int32)
        child_hi = np.zeros(n + 1, dtype=np.int32)
        for d in range(self.max_depth):
            at = self.level_offset[d]
            size = len(self.level_bytes[d])
            below = self.level_offset[d + 1] if d + 1 < self.max_depth else n
            child_lo[at: at + size] = self.child_lo[d] + below
            child_hi[at: at + size] = self.child_hi[d] + below
        if self.max_depth:
            child_hi[n] = len(self.level_bytes[0])
        byte = np.concatenate(self.level_bytes).astype(np.uint8) if self.max_depth else np.zeros(0, np.uint8)
        return child_lo, child_hi, byte, self.end_ptr.astype(np.int32), self.end_tokens.astype(np.int32)

    @cached_property
    def walk_layout(self) -> bytes:
        """Every array the native walk reads, in one buffer (`_trie_walk.layout`: the level-order
        bytes and token ends, and the trie in preorder, where the walk runs)."""
        return layout(*self.flat_arrays)

    @cached_property
    def global_parent(self) -> np.ndarray:
        """The parent of every node as a global node number (depth-0 nodes: the root, `num_nodes`)."""
        parent = np.full(self.num_nodes, self.num_nodes, dtype=np.int64)
        for d in range(1, self.max_depth):
            at = self.level_offset[d]
            parent[at: at + len(self.parent[d])] = self.parent[d] + self.level_offset[d - 1]
        return parent

    @staticmethod
    def _lcp(matrix: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """Longest common prefix of each sorted token with its predecessor (0 for the first)."""
        n = len(lens)
        lcp = np.zeros(n, dtype=np.int64)
        if n < 2:
            return lcp
        chunk = 16384
        for lo in range(1, n, chunk):
            hi = min(n, lo + chunk)
            diff = matrix[lo:hi] != matrix[lo - 1:hi - 1]
            first = np.where(diff.any(axis=1), diff.argmax(axis=1), matrix.shape[1])
            lcp[lo:hi] = np.minimum(first, np.minimum(lens[lo:hi], lens[lo - 1:hi - 1]))
        return lcp
