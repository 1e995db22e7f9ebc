"""Token masks of CFG configurations, split at terminal boundaries.

For a hypothesis (earley_set, terminal t, state s), a token is allowed when either
- it stays inside t: the terminal state's inside mask (`terminal_tables`: one trie walk per
  terminal state, shared by every configuration, grammar and compilation), or
- t may end after one of its proper prefixes (the state's `Exits`) and the rest goes on from the
  Earley set after t: through each expected terminal's `Continuation` (the walk inside that
  terminal from those exits, cached on the exits and independent of the parser), recursively
  where that terminal may end too.  The parser is consulted only for which terminals may come
  next (memoised scans), so new Earley sets cost dictionary lookups, not trie walks.
A configuration's mask is the OR of its hypotheses' masks (a boundary hypothesis: of its
expected terminals from their start states), plus the stop tokens where the parse may end.

At compile time (`warm`, called where a grammar is compiled) a grammar builds the tables most
first visits need: those of each terminal's start state and of the states one byte in, the
terminals its first sets expect first, within `WARM_SECONDS` of thread CPU.  This moves the
costliest walks of a new grammar (a name's loop state: every token that is a name; a member
key's state after its quote, one per key after `{"`) out of its first masks, the way XGrammar
precomputes at compile time, but for a handful of states only.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING

import numpy as np

from formwork.grammar.cfg.continuations import Continuation, continuation
from formwork.grammar.cfg.earley import DEAD_SET
from formwork.grammar.cfg.terminal_tables import TerminalTable, terminal_table
from formwork.grammar.dfa import START
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.packed import pack_token_ids
from formwork.grammar.terminal_exits import Exits, byte_set

if TYPE_CHECKING:
    from formwork.grammar.cfg.configs import ConfigBuilder
    from formwork.grammar.token_mask import TokenMaskCache


_UNSEEN = object()
WARM_SECONDS = 0.010  # thread CPU a compile may spend building its terminals' first tables


def _add(words: np.ndarray, hypothesis: tuple[TerminalTable, tuple[Continuation, ...]]) -> None:
    """OR the tokens of a hypothesis into packed mask `words`."""
    table, steps = hypothesis
    table.add_to(words)
    for step in steps:
        step.add_to(words)


class ConfigMasks:
    """Per-configuration masks of one CFG automaton (see the module docstring)."""

    def __init__(self, builder: "ConfigBuilder", max_entries: int = 512):
        self.builder = builder  # not the automaton: a cycle with it would outlive the grammar until a full collection
        self.max_entries = max_entries
        self._hyp: OrderedDict[tuple, tuple] = OrderedDict()  # (t, s, after) -> `hypothesis(...)`
        self._tables: dict[tuple[int, int], TerminalTable] = {}  # (terminal, state) -> shared table
        self._starts: dict[int, tuple] = {}  # terminal -> `_start(terminal)`
        self._keeps: dict[int, bytes] = {}  # terminal -> `_keep(terminal)`
        self._follow: list[frozenset[int]] | None = None  # FOLLOW set of each terminal
        self._step_of: OrderedDict[tuple[Exits, int], Continuation | None] = OrderedDict()  # see `_step`
        self._stop_words: np.ndarray | None = None
        self._not_stop_words: np.ndarray | None = None
        self._lock = threading.Lock()

    def compute(self, cache: "TokenMaskCache", state: int, accepting: bool, max_seconds: float | None) -> np.ndarray:
        """Packed mask of configuration `state` (`accepting`: whether the whole parse may end there)."""
        deadline = None if max_seconds is None else time.perf_counter() + max_seconds
        b = self.builder
        words = np.zeros((cache.vocab.vocab_size + 31) // 32, dtype=np.int32)
        for sid, t, s in b.sets[state]:
            if deadline is not None and time.perf_counter() > deadline:
                raise GrammarBudgetError(f"token mask computation exceeded its step budget of {max_seconds:g} s")
            if t == -1:
                for t2 in b.parser.expected(sid):
                    _add(words, self.hypothesis(cache, sid, t2, START, deadline))
            else:
                _add(words, self.hypothesis(cache, sid, t, s, deadline))
        if self._stop_words is None:
            self._stop_words = pack_token_ids(np.asarray(cache.vocab.stop_token_ids, dtype=np.int64),
                                              cache.vocab.vocab_size)
            self._not_stop_words = ~self._stop_words
        words &= self._not_stop_words  # terminal masks allow stops where the terminal may end...
        if accepting:  # ...but only the whole parse decides
            words |= self._stop_words
        return words

    def warm(self, cache: "TokenMaskCache") -> None:
        """Build each terminal's start row and FOLLOW bytes, and the tables of its start state and
        of the states one byte in (shared by language with every grammar), terminals nearest the
        start first, for at most `WARM_SECONDS` of this thread's CPU."""
        stop = time.thread_time() + WARM_SECONDS
        for t in self._nearest_first():
            dfa = self.builder.terminals[t]
            self._keep(t)
            row = self._start(t)[3]
            for s in (START, *sorted(set(row[row != 0].tolist()))):
                if time.thread_time() > stop:
                    return
                if (t, s) not in self._tables:
                    self._tables[(t, s)] = terminal_table(cache, dfa, s)

    def _nearest_first(self) -> list[int]:
        """Every terminal, breadth first from those the first Earley set expects along FOLLOW sets."""
        parser = self.builder.parser
        follow = self._follow_sets()
        order = sorted(parser.expected(parser.start))
        seen = set(order)
        for t in order:  # the loop reaches the terminals appended on the way
            for t2 in sorted(follow[t] - seen):
                seen.add(t2)
                order.append(t2)
        return order + [t for t in range(len(self.builder.terminals)) if t not in seen]

    def hypothesis(self, cache: "TokenMaskCache", sid: int, t: int, s: int,
                   deadline: float | None) -> tuple[TerminalTable, tuple[Continuation, ...]]:
        """The tokens of one hypothesis: those inside terminal t from state s (its table), and
        the continuations of those that end t part way and go on from the Earley set after it."""
        table = self._tables.get((t, s))
        if table is None:
            table = self._tables[(t, s)] = terminal_table(cache, self.builder.terminals[t], s, deadline)
        # the parser moves past t only for tokens that end t part way
        after = self.builder.parser.scan(sid, t) if table.exits.node.size else DEAD_SET
        key = (t, s, after)
        got = self._hyp.get(key)
        if got is not None:
            self._hyp.move_to_end(key)
            return got
        steps: dict[Continuation, None] = {}
        if after != DEAD_SET:
            self._continue(table.exits, after, deadline, steps)
        got = (table, tuple(steps))
        with self._lock:
            self._hyp[key] = got
            if len(self._hyp) > self.max_entries:
                self._hyp.popitem(last=False)
        return got

    def _continue(self, exits: Exits, sid: int, deadline: float | None, steps: dict) -> None:
        """Collect in `steps` the continuations with tokens that go on from `exits` with the parser
        at Earley set `sid`: into each expected terminal, and on where that terminal may end too."""
        if deadline is not None and time.perf_counter() > deadline:
            raise GrammarBudgetError("token mask computation exceeded its step budget")
        parser, step_of = self.builder.parser, self._step_of
        for t2 in parser.expected(sid):
            step = step_of.get((exits, t2), _UNSEEN)
            if step is _UNSEEN:
                step = self._step(exits, t2, deadline)
            if step is None:
                continue
            if step.at.size:
                steps[step] = None
            if step.exits.node.size:
                after = parser.scan(sid, t2)
                if after != DEAD_SET:
                    self._continue(step.exits, after, deadline, steps)

    def _step(self, exits: Exits, t2: int, deadline: float | None) -> Continuation | None:
        """The continuation from `exits` into terminal `t2` (None when no exit byte can start it),
        remembered per (exits, terminal) for this grammar (`_step_of`, bounded like `_hyp`)."""
        start = self._start(t2)
        step = None
        if exits.first_bytes & start[0]:
            step = continuation(exits, start[2], deadline, start[1], start[3], self._keep(t2))
        with self._lock:
            self._step_of[(exits, t2)] = step
            if len(self._step_of) > 8 * self.max_entries:
                self._step_of.popitem(last=False)
        return step

    def _keep(self, t: int) -> bytes:
        """The bytes that may start a terminal right after terminal t in this grammar (its FOLLOW
        set's first bytes), as a 32-byte bitmap: where t ends part way through a token, only the
        children spelling these bytes can go on, so a continuation into t keeps no other exits.
        (A terminal table keeps them all: terminals that end alike share its exits.)"""
        got = self._keeps.get(t)
        if got is None:
            bits = 0
            for t2 in self._follow_sets()[t]:
                bits |= self._start(t2)[0]
            got = self._keeps[t] = bits.to_bytes(32, "little")
        return got

    def _follow_sets(self) -> list[frozenset[int]]:
        """The FOLLOW set of every terminal (computed once)."""
        if self._follow is None:
            self._follow = self.builder.parser.terminal_follow(len(self.builder.terminals))
        return self._follow

    def _start(self, t: int) -> tuple[int, Hashable, object, np.ndarray]:
        """(the bytes terminal t may start with, the state key of its start, its DFA, the start
        state's row per byte as int64), remembered per terminal."""
        got = self._starts.get(t)
        if got is None:
            dfa = self.builder.terminals[t]
            row = np.ascontiguousarray(dfa.row(START), dtype=np.int64)
            got = self._starts[t] = (byte_set(row != 0), dfa.state_key(START), dfa, row)
        return got
