"""The byte automaton of a context-free grammar: lexer hypotheses over canonical Earley sets.

A configuration is a frozenset of hypotheses (earley_set, terminal, terminal_dfa_state): the
text since the set's boundary is a live prefix of `terminal`.  `terminal = -1` marks a
boundary (nothing of the next terminal read yet).  On a byte every hypothesis moves inside its
terminal's DFA; where the terminal may end, the parser scans it (memoised) and a boundary on the
new set is added.  The parser is therefore consulted only where a byte completes a terminal.

`ConfigBuilder` has the interface of `subset_builder.SubsetBuilder`, so a `LazyDFA` over it is an
ordinary (infinite, lazily built) byte DFA: the matcher, token-mask cache, trie walk and
jump-forward code of part 1 work on it unchanged, and per-configuration masks are cached.
"""
from __future__ import annotations

import numpy as np

from formwork.grammar.cfg.earley import DEAD_SET, EarleyParser
from formwork.grammar.cfg.masks import ConfigMasks
from formwork.grammar.dfa import DEAD, DFA, START, classes_of
from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.lazy_dfa import LazyDFA

Config = frozenset
BOUNDARY = -1


def combined_byte_classes(dfas: list[DFA | LazyDFA]) -> tuple[np.ndarray, np.ndarray]:
    """(class_of_byte [256], one representative byte per class) refining every terminal's classes."""
    if not dfas:
        return np.zeros(256, dtype=np.int32), np.zeros(1, dtype=np.int64)
    class_of_byte, representatives = classes_of(np.stack([d.byte_classes()[0] for d in dfas], axis=1))
    return class_of_byte.astype(np.int32), representatives


class ConfigBuilder:
    """Configurations of a context-free grammar, built on demand (SubsetBuilder interface)."""

    def __init__(self, parser: EarleyParser, terminals: list[DFA | LazyDFA], max_hypotheses: int = 4096):
        self.parser = parser
        self.terminals = terminals
        self.max_hypotheses = max_hypotheses
        self.class_of_byte, self._representatives = combined_byte_classes(terminals)
        self.num_classes = len(self._representatives)
        self.core = None  # rows are built in Python (see LazyDFA.walk_tables)
        self._moves: dict[tuple[int, int], list[tuple[int, int, bool]]] = {}
        start: Config = frozenset({(parser.start, BOUNDARY, 0)})
        self.sets: list[Config] = [frozenset(), start]
        self.index: dict[Config, int] = {frozenset(): DEAD, start: START}

    def accepting(self, i: int) -> bool:
        sets = self.parser.sets
        return any(t == BOUNDARY and sets[sid].accepting for sid, t, _ in self.sets[i])

    def check_size(self) -> None:
        """Configurations are bounded as they are interned (`max_hypotheses`)."""

    def accepting_flags(self, start: int) -> np.ndarray:
        """The accepting flag of every configuration from `start` on."""
        return np.array([self.accepting(i) for i in range(start, len(self.sets))], dtype=bool)

    def _terminal_moves(self, t: int, s: int) -> list[tuple[int, int, bool]]:
        """(class, next state, next state accepts) for every class that keeps terminal `t` alive."""
        key = (t, s)
        got = self._moves.get(key)
        if got is None:
            dfa = self.terminals[t]
            row = dfa.row(s)[self._representatives]
            live = np.flatnonzero(row)
            dfa.ensure(row[live])
            accepting = dfa.accepting
            got = self._moves[key] = [(int(k), int(row[k]), bool(accepting[row[k]])) for k in live]
        return got

    def row(self, i: int) -> list[int]:
        """Successor configuration per byte class (new configurations are interned)."""
        parser = self.parser
        moves: list[set[tuple[int, int, int]]] = [set() for _ in range(self.num_classes)]
        for sid, t, s in self.sets[i]:
            if t == BOUNDARY:
                starts = [(t2, START) for t2 in parser.expected(sid)]
            else:
                starts = [(t, s)]
            for t2, s2 in starts:
                for k, nxt, done in self._terminal_moves(t2, s2):
                    target = moves[k]
                    target.add((sid, t2, nxt))
                    if done:
                        after = parser.scan(sid, t2)
                        if after != DEAD_SET:
                            target.add((after, BOUNDARY, 0))
        out = [DEAD] * self.num_classes
        for k, hyps in enumerate(moves):
            if hyps:
                out[k] = self._intern(frozenset(hyps))
        return out

    def write_rows(self, states: list[int], rows: np.ndarray, expanded: np.ndarray) -> None:
        """Write the rows of `states` into `rows` and set their `expanded` flags."""
        idx = np.array(states, dtype=np.intp)
        rows[idx] = [self.row(s) for s in states]
        expanded[idx] = True

    def _intern(self, config: Config) -> int:
        got = self.index.get(config)
        if got is None:
            if len(config) > self.max_hypotheses:
                raise GrammarBudgetError(
                    f"the grammar keeps more than {self.max_hypotheses} parse hypotheses alive "
                    "(budget max_hypotheses; it is too ambiguous)")
            got = self.index[config] = len(self.sets)
            self.sets.append(config)
        return got


class ConfigDFA(LazyDFA):
    """The configuration automaton; its token masks are split at terminal boundaries (`masks`)."""

    def __init__(self, builder: ConfigBuilder):
        super().__init__(builder, root=None)  # cache keys unique to this automaton
        self.builder = builder
        self.masks = ConfigMasks(builder)

    def compute_mask(self, cache, state: int, max_seconds: float | None) -> np.ndarray:
        """Packed mask of configuration `state` (called by `TokenMaskCache` on a miss)."""
        return self.masks.compute(cache, state, bool(self.accepting[state]), max_seconds)


def config_automaton(parser: EarleyParser, terminals: list[DFA | LazyDFA]) -> ConfigDFA:
    """The lazily built byte DFA of the grammar."""
    return ConfigDFA(ConfigBuilder(parser, terminals))
