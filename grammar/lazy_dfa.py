"""Subset construction on demand: a DFA whose states are built the first time they are reached.

Compiling a grammar only builds its NFA; each DFA state (a set of NFA states) gets its row of
transitions when a matcher, a mask walk or an oracle first needs it.  Most of a large grammar's
automaton is never visited by one generation, so this keeps compile time small.  The NFA
builder leaves out sub-terms with empty languages, so every NFA state can reach acceptance:
every non-empty state set has a non-empty language and the empty set is exactly the dead state.
"""
from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from formwork.grammar._trie_walk import live_bytes as _live_bytes
from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DEAD, DFA, START, minimize
from formwork.grammar.gc_pause import paused_gc
from formwork.grammar.ir import Node
from formwork.grammar.lexemes import LexemeState
from formwork.grammar.nfa import NFA
from formwork.grammar.row_storage import RowStorage
from formwork.grammar.subset_builder import SubsetBuilder

_KEYS = itertools.count()
_ROOTS: "OrderedDict[Hashable, int]" = OrderedDict()  # IR root -> small id, for cache keys
_ROOTS_LOCK = threading.Lock()
_MAX_ROOTS = 4096
_PAUSE_GC_FROM = 64  # expanding this many states at once pauses the cyclic garbage collector
_MAX_IDS = 4096  # `state_of` answers kept per automaton
_EXPAND_CHUNK = 2048  # states built between two budget checks in `expand_all` (~25 ms of CPU at most)


def _root_id(root: Hashable | None) -> int:
    """A small integer naming `root` (equal roots, equal ids), so that keys hash and compare fast."""
    if root is None:
        return -1 - next(_KEYS)
    with _ROOTS_LOCK:
        got = _ROOTS.get(root)
        if got is None:
            got = _ROOTS[root] = next(_KEYS)
            if len(_ROOTS) > _MAX_ROOTS:
                _ROOTS.popitem(last=False)
        else:
            _ROOTS.move_to_end(root)
        return got


class LazyDFA:
    """A DFA (DEAD=0, START=1) whose rows are computed on first use.

    Rows are kept over byte classes (`byte_classes`); hot paths call `ensure(states)` before
    reading them (`walk_tables` for the native trie walk, `class_row`); `table` expands
    everything (for oracles and tests).  Expansions are serialised by a lock, but a walk reads
    arrays that an expansion may reallocate, so matchers sharing one automaton must be driven
    from one thread at a time.
    """

    lazy = True

    def __init__(self, builder: SubsetBuilder, root: Hashable | None = None,
                 standalone: Callable[[Node], "LazyDFA"] | None = None):
        self._b = builder
        self._standalone = standalone
        self._lexeme_states: dict[int, LexemeState | None] = {}
        self._lock = threading.Lock()
        self._cache: dict = {}
        self._root = _root_id(root)
        self._class_bytes: bytes | None = None  # class_of_byte as bytes (a class is < 256), for `walk`
        self._live: dict[int, bytes] = {}  # `live_bytes` per state asked
        self._ids: dict[frozenset[int] | tuple[int, ...], int] = {}  # `state_of`'s answers (a set's id never changes)
        self._automata: dict[int, tuple[Node, LazyDFA]] = {}  # `_automaton_of`: id(lexeme) -> (lexeme, automaton)
        self._after_region: dict[int, int] = {}  # a lexeme region's end NFA state -> the DFA state after it
        self.boundary_twin: LazyDFA | None = None  # a lexeme's twin's automaton (`lexemes.lexeme`)
        self._cap = cap = max(64, len(builder.sets))
        self._storage = RowStorage(cap, builder.num_classes)
        self._rows_k = self._storage.rows()
        self._accepting = np.zeros(cap, dtype=bool)
        self._expanded = np.zeros(cap, dtype=bool)
        self._known = 0  # state sets whose accepting flag is recorded
        self._complete = False
        self._record_new()
        self._expanded[DEAD] = True  # the dead row is all zeros

    # ------------------------------------------------------------ storage
    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, 2 * self._cap)

        def grown(arr: np.ndarray) -> np.ndarray:
            out = np.zeros(cap, dtype=arr.dtype)
            out[: len(arr)] = arr
            return out

        self._rows_k = None  # this automaton's view: the storage may grow in place without it
        self._rows_k = self._storage.grow(cap)
        self._accepting = grown(self._accepting)
        self._expanded = grown(self._expanded)
        self._cap = cap

    def _record_new(self) -> None:
        known = len(self._b.sets)
        if known > self._cap:
            self._grow(known)
        if known > self._known:
            self._accepting[self._known: known] = self._b.accepting_flags(self._known)
            self._known = known

    def _expand(self, states: list[int]) -> None:
        """Compute the rows of `states` (distinct, not yet expanded).  The states the rows lead
        to are recorded even when the builder stops on its budget after interning them: a row
        must never point past `num_states` (a later `materialize` would hand it to `minimize`)."""
        try:
            self._b.write_rows(states, self._rows_k, self._expanded)
        finally:
            self._record_new()

    def ensure(self, states: np.ndarray | list[int]) -> None:
        """Compute the rows of the given states (no-op for the ones already known)."""
        expanded = self._expanded
        if isinstance(states, np.ndarray):
            states = states.tolist()
        missing = sorted({s for s in states if not expanded[s]})
        if not missing:
            return
        with self._lock:
            missing = [s for s in missing if not self._expanded[s]]
            if not missing:
                return
            if len(missing) < _PAUSE_GC_FROM:
                self._expand(missing)
            else:
                with paused_gc():
                    self._expand(missing)

    def ensure_one(self, s: int) -> None:
        if not self._expanded[s]:
            with self._lock:
                if not self._expanded[s]:
                    self._expand([s])

    # ------------------------------------------------------------ DFA interface
    @property
    def num_states(self) -> int:
        return self._known

    @property
    def accepting(self) -> np.ndarray:
        return self._accepting[: self._known]

    def state_key(self, s: int) -> tuple[int, tuple[int, ...]]:
        """Names the language of state `s` for state-level caches: the IR root it was built
        from (construction is deterministic) and its set of NFA states."""
        return self._root, self._b.sets[s]

    @property
    def nfa(self) -> NFA:
        return self._b._nfa

    def state_of(self, state_set: frozenset[int] | tuple[int, ...]) -> int:
        """The DFA state whose NFA state set is `state_set` (closed under epsilon moves)."""
        sid = self._ids.get(state_set)
        if sid is not None:
            return sid
        with self._lock:
            try:
                sid = self._b.intern(tuple(sorted(state_set)))
            finally:
                self._record_new()  # as in `_expand`: interned states are recorded, budget or not
        if len(self._ids) < _MAX_IDS:
            self._ids[state_set] = sid
        return sid

    def closure(self, nfa_states: list[int]) -> frozenset[int]:
        """The NFA states reached from `nfa_states` by epsilon moves."""
        return frozenset(x for q in nfa_states for x in self._b.closure(q))

    def lexeme_state(self, s: int) -> LexemeState | None:
        """Where state `s` lies inside a lexeme (see `formwork.grammar.lexemes`), or None."""
        if s in self._lexeme_states:
            return self._lexeme_states[s]
        found = self._b.region_of(s) if self._standalone is not None else None
        if found is not None:
            region, inside, at_start, ends = found
            automaton, local = region.local_state(inside, at_start, ends, self._automaton_of)
            after = self._after_region.get(region.end)
            if after is None:
                after = self._after_region[region.end] = self.state_of(self._b.closure(region.end))
            found = LexemeState(automaton, local, after, ends,
                                region.counted_state(inside, at_start, self._standalone))
        self._lexeme_states[s] = found
        return found

    def _automaton_of(self, node: Node) -> "LazyDFA":
        """`standalone(node)`, kept per node object: each state inside a region asks for its
        lexeme's automaton again, and looking a lexeme up compares IR."""
        got = self._automata.get(id(node))
        if got is not None and got[0] is node:  # (the entry keeps `node` alive: its id is not reused)
            return got[1]
        automaton = self._standalone(node)
        self._automata[id(node)] = (node, automaton)
        return automaton

    def in_open_lexeme(self, s: int) -> bool:
        """Whether state `s` is in or at the start of an open-ended lexeme (see `lexemes.lexeme`)."""
        return self._standalone is not None and self._b.in_open_lexeme(s)

    def walk_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, object]:
        """(rows over classes, class_of_byte, row-built flags, accepting flags, subset core) for
        the native trie walk, which builds missing rows in place through the core (None: it
        hands them back); the arrays are replaced when the automaton grows (`record_new`)."""
        return self._rows_k, self._b.class_of_byte, self._expanded, self._accepting, self._b.core

    def record_new(self) -> None:
        """Take in the states a native loop interned: grow the arrays, record accepting flags
        (and raise `GrammarBudgetError` if the automaton outgrew its budget).  The loop's row
        fills (`SubsetApi.fill`) wrote the flags of the new states that fit in the arrays."""
        known = len(self._b.sets)
        if self._known < known:
            with self._lock:
                if known <= self._cap:
                    self._known = max(self._known, known)
                else:
                    self._record_new()
            self._b.check_size()

    def row(self, s: int) -> np.ndarray:
        """Next state per byte."""
        self.ensure_one(s)
        return self._rows_k[s].take(self._b.class_of_byte)

    def live_bytes(self, s: int) -> bytes:
        """The bytes with a move out of state `s`, ascending (kept per state: a built row never
        changes, and the lexeme masks ask again for each state inside the lexeme)."""
        got = self._live.get(s)
        if got is not None:
            return got
        self.ensure_one(s)
        got = self._live[s] = _live_bytes(self._rows_k, self._b.class_of_byte, s)
        return got

    def class_row(self, s: int) -> np.ndarray:
        self.ensure_one(s)
        return self._rows_k[s]

    def byte_classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(class_of_byte, rows over classes); rows are valid for expanded states only."""
        return self._b.class_of_byte, self._rows_k[: self._known]

    def walk(self, state: int, data: bytes) -> int:
        classes = self._class_bytes
        if classes is None:  # bytes, not a list: 256 ints a young collection would visit
            classes = self._class_bytes = self._b.class_of_byte.astype(np.uint8).tobytes()
        for b in data:
            if not self._expanded[state]:
                self.ensure_one(state)
            state = int(self._rows_k[state, classes[b]])
            if state == DEAD:
                return DEAD
        return state

    def accepts(self, data: bytes) -> bool:
        state = self.walk(START, data)  # first: the walk may grow (replace) the flag array
        return bool(self._accepting[state])

    def is_empty(self) -> bool:
        return not bool(self._accepting[START]) and not self.class_row(START).any()  # every class has a byte

    def expand_all(self, budget: CompileBudget | None = None) -> None:
        """Build every reachable state, breadth-first: each round builds the rows of every state
        known so far in one batch."""
        if self._complete:
            return
        with self._lock:  # states a native loop interned before it raised (see `record_new`)
            self._record_new()
        done = 1
        while done < self._known:
            if budget is not None:
                budget.check_time("subset construction")
            end = min(self._known, done + _EXPAND_CHUNK)
            self.ensure(list(range(done, end)))
            done = end
        self._complete = True

    @property
    def table(self) -> np.ndarray:
        """The full transition table [num_states, 256] (expands every reachable state)."""
        self.expand_all()
        return self._rows_k[: self._known].take(self._b.class_of_byte, axis=1)

    def materialize(self, budget: CompileBudget | None = None) -> DFA:
        """The equivalent minimal eager DFA."""
        self.expand_all(budget)
        return minimize(self._rows_k[: self._known], self.accepting, START, self._b.class_of_byte)  # reads, copies
