"""A process-wide cache of sub-automata shared by every JSON Schema compilation.

The lowering marks reusable pieces (string and number leaves, the bounded any-JSON value, format
languages, pattern languages) with `freeze`, i.e. as `And` nodes, which the automaton builder
compiles once and splices in wherever they occur.  Keeping one builder alive across compilations
makes those DFAs a state-level cache: a later schema that uses the same piece reuses its DFA.
Recursive schemas share the DFAs of their terminals the same way.  Only sub-automata are shared;
no schema's compiled grammar is cached here.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from formwork.grammar.automaton import AutomatonBuilder
from formwork.grammar.budget import CompileBudget
from formwork.grammar.cfg import compile_cfg
from formwork.grammar.dfa import DEAD, START, DFA
from formwork.grammar.ir import Grammar, Node, Repeat
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.follow_exits import follow_trie
from formwork.grammar.twin_places import warm_twin_places
from formwork.grammar.lexeme_masks import warm_counted_masks, warm_slice_states
from formwork.grammar.lexemes import HORIZON
from formwork.grammar.nfa import region_tables

if TYPE_CHECKING:
    from formwork.grammar.token_mask import TokenMaskCache

MAX_COMPILATIONS = 512


class SharedAutomata:
    """Compiles IR with a builder whose memo of sub-automata outlives one compilation (renewed
    every `max_compilations` compilations to bound memory)."""

    def __init__(self, max_compilations: int = MAX_COMPILATIONS):
        self.max_compilations = max_compilations
        self._builder = AutomatonBuilder()
        self._uses = 0
        self._lock = threading.Lock()

    def _renewed_builder(self) -> AutomatonBuilder:
        self._uses += 1
        if self._uses > self.max_compilations:
            old, self._builder, self._uses = self._builder, AutomatonBuilder(), 1
            self._builder.take_eager(old, _format_nodes() + [_any_value_node()])
        return self._builder

    def compile(self, node: Node, budget: CompileBudget | None = None, keep: bool = True) -> DFA:
        """The automaton of `node` under `budget` (started here unless it is already); `keep`
        False leaves `node` itself out of the memo (a whole schema, unlike its pieces).  Each
        compilation builds on a fork of the shared builder, so compilations run side by side."""
        with self._lock:
            shared = self._renewed_builder()
        builder = shared.fork((budget or CompileBudget()).start())  # compiles run side by side
        out = builder.dfa(node, keep)
        with self._lock:
            shared.adopt(builder)
        return out

    def compile_cfg(self, grammar: Grammar, budget: CompileBudget | None = None) -> LazyDFA:
        """The Earley automaton of a recursive `grammar`, its terminal DFAs from the shared memo."""
        with self._lock:
            shared = self._renewed_builder()
        builder = shared.fork((budget or CompileBudget()).start())
        out = compile_cfg(grammar, builder.budget, builder)
        with self._lock:
            shared.adopt(builder)
        return out


    def warm_string_masks(self, cache: "TokenMaskCache") -> None:
        """Token masks of JSON string contents, now rather than on first use: any length, and
        0..HORIZON characters left (shared by the bounded strings of every schema); and the
        vocabulary tables of where those and numbers may end inside a token."""
        from formwork.grammar.json_schema.strings import ANY_CONTENT, CANONICAL_CHAR, string_content

        with self._lock:
            builder = self._builder
            counted = builder.lexeme_automaton(Repeat(CANONICAL_CHAR, 0, HORIZON))
            unbounded = [builder.lexeme_automaton(node) for node in (string_content(), ANY_CONTENT)]
        warm_counted_masks(cache, counted)
        for automaton in unbounded:
            cache.lexeme_base(automaton, START, pin=True)
        warm_twin_places(cache, unbounded[1])  # ANY_CONTENT: the twin of every undeclared-key lexeme
        for follow in (b'"', b",}", b",]", b",", b"}", b"]"):  # the pruned tries of the bytes that end
            follow_trie(cache.vocab.trie, follow)  # JSON lexemes (lexeme exits)

    def warm_any_values(self, cache: "TokenMaskCache") -> None:
        """The automaton of the bounded any-JSON value of the default whitespace policy (what
        ``{}``, ``true`` and untyped members inside a constrained schema lower to; ~0.4 s at the
        default bound), kept when the builder is renewed, and the token masks of its start and of
        the states one byte into a container: a document's first mask at such a value is the
        shared mask of the state it is in plus the tokens that finish the value part way."""
        with self._lock:
            self._builder.budget = CompileBudget().start()  # the warm-up's own (compiles fork theirs)
            dfa = self._builder.eager(_any_value_node())
        region_tables(dfa)  # built before the start-up freeze: else the first schema builds them
        # (~20k tuples) where full collections walk them
        for state in (START, dfa.walk(START, b"["), dfa.walk(START, b"{")):
            if state != DEAD:
                cache.lexeme_base(dfa, state, pin=True)
        warm_slice_states(cache, dfa)  # inside its strings (~40 ms): the costliest first masks

    def warm_formats(self) -> None:
        """The automata of every supported `format` (they depend on no schema; the first use of
        some, such as email's intersections, costs tens of milliseconds), kept when the builder
        is renewed, and their content hashes, which name their states in the mask cache (email's
        1,257 states take ~2 ms to hash: that was a first mask's), and their tables as regions
        of a document's NFA (email's: ~1 ms, else the first schema with that format's)."""
        with self._lock:
            self._builder.budget = CompileBudget().start()  # the warm-up's own (compiles fork theirs)
            for node in _format_nodes():
                dfa = self._builder.eager(node)
                dfa.state_key(START)
                region_tables(dfa)


def _format_nodes() -> list[Node]:
    """The frozen IR of every supported format (see `pieces.encoded_format`); a renewed builder
    keeps their automata."""
    from formwork.grammar.json_schema.formats import SUPPORTED
    from formwork.grammar.json_schema.pieces import encoded_format

    return [encoded_format(name) for name in sorted(SUPPORTED)]


def _any_value_node() -> Node:
    """The frozen IR of the bounded any-JSON value under the default options (see
    `lowering.Lowerer.unconstrained`)."""
    from formwork.grammar.json_schema.lowering import _shared_any_value
    from formwork.grammar.json_schema.options import BOUNDED_NESTING_DEPTH, JsonSchemaOptions

    return _shared_any_value(JsonSchemaOptions())(BOUNDED_NESTING_DEPTH, 0)


SHARED = SharedAutomata()


def accepts(dfa: Any, data: bytes) -> bool:
    """Whether `dfa` (eager or lazy) accepts `data`; walks first, since a lazy walk may grow the
    accepting flags."""
    state = dfa.walk(START, data)
    return bool(dfa.accepting[state])
