"""Process-wide memos of things computed per vocabulary trie (exit seeds, terminal tables...).

Each memo is an LRU per trie (a trie lives as long as its vocabulary, so the memos go with it).
Building runs outside the lock: two threads may build the same entry, and the last one is kept.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from formwork.grammar.token_trie import TokenTrie

T = TypeVar("T")


class TrieMemo(Generic[T]):
    """`get(trie, key, build)`: the entry for `key`, built by `build()` on a miss."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._tables: "weakref.WeakKeyDictionary[TokenTrie, OrderedDict[Hashable, T]]" = \
            weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._last: tuple[weakref.ref, OrderedDict[Hashable, T]] | None = None  # the last trie's table

    def _table(self, trie: TokenTrie) -> "OrderedDict[Hashable, T]":
        """`trie`'s table (made on first use); the last one asked is kept beside the weak
        dictionary, whose lookups make a weak reference each (one trie serves nearly every call)."""
        last = self._last
        if last is not None and last[0]() is trie:
            return last[1]
        table = self._tables.get(trie)
        if table is None:
            table = self._tables[trie] = OrderedDict()
        self._last = (weakref.ref(trie, self._forget), table)
        return table

    def _forget(self, dead: weakref.ref) -> None:
        """Drop the kept table once its trie is gone (the weak dictionary drops its own)."""
        last = self._last
        if last is not None and last[0] is dead:
            self._last = None

    def get(self, trie: TokenTrie, key: Hashable, build: Callable[[], T]) -> T:
        with self._lock:
            table = self._table(trie)
            got = table.get(key)
            if got is not None:
                table.move_to_end(key)
                return got
        got = build()
        with self._lock:
            table[key] = got
            if len(table) > self.max_entries:
                table.popitem(last=False)
        return got
