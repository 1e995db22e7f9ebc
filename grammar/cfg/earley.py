"""Earley recognition over terminals, with Earley sets hash-consed into canonical ids.

An item is (production, dot, origin).  Inside a set, an item predicted there has origin -1
("this set"); other origins are ids of earlier canonical sets.  A set's key is its
unfinished items plus whether the start rule is complete, so two sets with equal keys
accept exactly the same continuations: the key is a complete description of the parser
state, `scan(set_id, terminal)` is memoised, and the parser becomes a lazily built
automaton over set ids.  Nullable symbols use the Aycock-Horspool prediction rule.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg.follow_sets import terminal_follow
from formwork.grammar.cfg.productions import ContextFreeGrammar, no_tick
from formwork.grammar.errors import GrammarBudgetError

Item = tuple[int, int, int]
DEAD_SET = -1


class EarleySet:
    """One canonical Earley set: items by the symbol they wait for, and acceptance."""

    __slots__ = ("id", "waiting", "scans", "accepting")

    def __init__(self, set_id: int, waiting: dict[int, list[Item]], scans: dict[int, list[Item]], accepting: bool):
        self.id = set_id
        self.waiting = waiting  # nonterminal -> items whose dot is before it
        self.scans = scans  # terminal index -> items whose dot is before it
        self.accepting = accepting


class EarleyParser:
    """The Earley automaton of one context-free grammar (shared by all its matchers)."""

    def __init__(self, cfg: ContextFreeGrammar, nullable_terminals: set[int], max_items: int = 20_000,
                 budget: CompileBudget | None = None):
        """`budget` bounds building the tables here; later sets are bounded by `max_items`."""
        tick = budget.tick if budget is not None else no_tick
        self.max_items = max_items
        self.lhs = [p.lhs for p in cfg.productions]
        self.rhs = [p.rhs for p in cfg.productions]
        self.augmented = len(self.lhs)
        self.lhs.append(len(cfg.names))
        self.rhs.append((cfg.start,))
        self.rhs_len = [len(rhs) for rhs in self.rhs]
        self.by_lhs: list[list[int]] = [[] for _ in range(len(cfg.names) + 1)]
        for i, lhs in enumerate(self.lhs):
            tick("building the Earley tables")
            self.by_lhs[lhs].append(i)
        self.nullable_terminals = frozenset(nullable_terminals)
        self.nullable = self._nullable(len(cfg.names) + 1, tick)
        self.sets: list[EarleySet] = []
        self._index: dict[tuple[frozenset[Item], bool], int] = {}
        self._scan_memo: dict[tuple[int, int], int] = {}
        self._predictions: dict[int, tuple[tuple[Item, ...], frozenset[int]]] = {}
        self._lock = threading.RLock()
        self.start = self._intern(self._close([(self.augmented, 0, -1)]))

    def _nullable(self, count: int, tick: Callable[[str], None]) -> list[bool]:
        out = [False] * count
        changed = True
        while changed:
            changed = False
            for lhs, rhs in zip(self.lhs, self.rhs):
                tick("building the Earley tables")
                if not out[lhs] and all((s >= 0 and out[s]) or (s < 0 and ~s in self.nullable_terminals)
                                        for s in rhs):
                    out[lhs] = changed = True
        return out

    def terminal_follow(self, num_terminals: int) -> list[frozenset[int]]:
        """For every terminal, the terminals that may come right after it in some sentence (the
        textbook FOLLOW sets over terminals; nullable terminals and nonterminals are seen through):
        every Earley set after scanning a terminal expects a subset of its FOLLOW set."""
        return terminal_follow(self.lhs, self.rhs, self.nullable, self.nullable_terminals, len(self.by_lhs),
                               num_terminals)

    def expected(self, set_id: int):
        """Terminal indices the set can scan next."""
        return self.sets[set_id].scans.keys()

    def scan(self, set_id: int, terminal: int) -> int:
        """The canonical set after scanning `terminal` from `set_id` (DEAD_SET if not expected)."""
        key = (set_id, terminal)
        got = self._scan_memo.get(key)
        if got is None:
            with self._lock:
                items = self.sets[set_id].scans.get(terminal)
                if not items:
                    got = DEAD_SET
                else:
                    kernel = [(p, d + 1, set_id if o == -1 else o) for p, d, o in items]
                    got = self._intern(self._close(kernel))
                self._scan_memo[key] = got
        return got

    def _close(self, kernel: list[Item]) -> dict[Item, None]:
        items: dict[Item, None] = dict.fromkeys(kernel)
        queue = list(items)
        predicted: set[int] = set()
        rhs_of, rhs_len, lhs_of, sets = self.rhs, self.rhs_len, self.lhs, self.sets
        nullable, nullable_terminals, max_items = self.nullable, self.nullable_terminals, self.max_items
        for p, d, o in queue:  # the loop reaches the items appended on the way
            if len(queue) > max_items:
                raise GrammarBudgetError(f"an Earley set grew past {max_items} items "
                                         "(budget max_items; the grammar is too ambiguous here)")
            if d == rhs_len[p]:
                if o != -1:  # empty completions (o == -1) were advanced at prediction time
                    for p2, d2, o2 in sets[o].waiting.get(lhs_of[p], ()):
                        item = (p2, d2 + 1, o if o2 == -1 else o2)
                        if item not in items:
                            items[item] = None
                            queue.append(item)
                continue
            x = rhs_of[p][d]
            if x >= 0:
                if x not in predicted:  # predictions need no processing: add their closure at once
                    closure, nonterminals = self._prediction(x)
                    predicted |= nonterminals
                    for item in closure:
                        if item not in items:
                            items[item] = None
                if not nullable[x]:
                    continue
            elif ~x not in nullable_terminals:
                continue
            item = (p, d + 1, o)
            if item not in items:
                items[item] = None
                queue.append(item)
        return items

    def _prediction(self, x: int) -> tuple[tuple[Item, ...], frozenset[int]]:
        """The items that predicting nonterminal `x` adds to a set, closed under prediction and
        nullable advances (all with origin "this set", so the same in every set), and the
        nonterminals predicted on the way."""
        got = self._predictions.get(x)
        if got is None:
            items: dict[Item, None] = {}
            predicted: set[int] = set()
            stack = [x]
            while stack:
                y = stack.pop()
                if y in predicted:
                    continue
                predicted.add(y)
                for q in self.by_lhs[y]:
                    rhs = self.rhs[q]
                    for d in range(len(rhs) + 1):
                        items[(q, d, -1)] = None
                        if d == len(rhs):
                            break
                        s = rhs[d]
                        if s >= 0:
                            stack.append(s)
                            if not self.nullable[s]:
                                break
                        elif ~s not in self.nullable_terminals:
                            break
            got = self._predictions[x] = (tuple(items), frozenset(predicted))
        return got

    def _intern(self, items: dict[Item, None]) -> int:
        rhs_of, rhs_len = self.rhs, self.rhs_len
        open_items = frozenset([it for it in items if it[1] < rhs_len[it[0]]])
        # the start rule is complete: its only item, predicted in the first set (id 0), read over
        accepting = (self.augmented, 1, -1) in items or (self.augmented, 1, 0) in items
        key = (open_items, accepting)
        got = self._index.get(key)
        if got is not None:
            return got
        waiting: dict[int, list[Item]] = {}
        scans: dict[int, list[Item]] = {}
        for item in open_items:
            x = rhs_of[item[0]][item[1]]
            if x >= 0:
                waiting.setdefault(x, []).append(item)
            else:
                scans.setdefault(~x, []).append(item)
        got = len(self.sets)
        self.sets.append(EarleySet(got, waiting, scans, accepting))
        self._index[key] = got
        return got
