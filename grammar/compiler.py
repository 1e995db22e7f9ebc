"""Compiling constraints to CompiledGrammar objects, with a cache by canonical spec."""
from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

import torch

from formwork.grammar.cfg.automaton import compile_automaton
from formwork.grammar.cfg.configs import ConfigDFA
from formwork.grammar.budget import CompileBudget, active_budget
from formwork.grammar.dfa import DFA
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.errors import EmptyLanguageError, GrammarError
from formwork.grammar.ir import Grammar, Node, alt, lit
from formwork.grammar.regex_parser import regex
from formwork.grammar.matcher import Matcher
from formwork.grammar.stored_mask import StoredMask
from formwork.grammar.token_mask import TokenMaskCache
from formwork.grammar.unique_vocab import vocab_tables
from formwork.grammar.vocabulary import Vocabulary

if TYPE_CHECKING:
    from formwork.grammar.unique_tracker import UniqueArrays


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> torch.Tensor:
    """Zeroed int32 mask buffer (batch_size, ceil(vocab_size / 32)); bit 1 = allowed."""
    if batch_size < 1 or vocab_size < 1:
        raise GrammarError(f"bad bitmask shape: batch {batch_size}, vocab {vocab_size}")
    return torch.zeros((batch_size, (vocab_size + 31) // 32), dtype=torch.int32)


class CompiledGrammar:
    """A constraint compiled against one vocabulary; make one `matcher()` per request."""

    def __init__(self, dfa: DFA | LazyDFA, vocab: Vocabulary, mask_cache: TokenMaskCache,
                 compile_seconds: float = 0.0, spec: Hashable | None = None):
        self.dfa = dfa
        self.vocab = vocab
        self.mask_cache = mask_cache
        self.compile_seconds = compile_seconds
        self.spec = spec
        self.warnings: list[str] = []
        self.state_masks: dict[int, StoredMask] = {}  # filled by matchers: state id -> mask
        self.state_complete: dict[int, bool] = {}  # filled by matchers: state id -> only a stop token may follow
        self.token_steps: dict[int, int] = {}  # filled by matchers: state * vocab size + token id -> next state
        self.unique: "UniqueArrays | None" = None  # arrays whose items matchers compare (JSON Schema)
        if dfa.is_empty():
            raise EmptyLanguageError("the constraint matches no string at all")

    @property
    def num_states(self) -> int:
        return self.dfa.num_states

    def matcher(self, max_step_seconds: float | None = 1.0) -> Matcher:
        return Matcher(self, max_step_seconds=max_step_seconds)

    def __repr__(self) -> str:
        return f"CompiledGrammar(states={self.num_states}, spec={self.spec!r:.60})"


class GrammarCompiler:
    """Compiles constraints for one vocabulary.

    `cache_size` compiled grammars are kept, keyed by their canonical spec
    (`cache_enabled=False` turns that off, e.g. for benchmarks).  The token-mask cache
    (`mask_cache_size` states) is always shared by every grammar of this compiler.
    """

    def __init__(self, vocab: Vocabulary, cache_size: int = 256, cache_enabled: bool = True,
                 mask_cache_size: int = 4096, budget: CompileBudget | None = None):
        self.vocab = vocab
        self.cache_size = cache_size
        self.cache_enabled = cache_enabled
        self.budget = budget or CompileBudget()
        self.mask_cache = TokenMaskCache(vocab, mask_cache_size)
        self._grammars: OrderedDict[Hashable, CompiledGrammar] = OrderedDict()
        self._lock = threading.Lock()  # compilations may run on several threads at once

    def prepare(self) -> None:
        """Build the per-vocabulary tables now rather than on first use: the token trie, the
        slice tables, and the token masks of JSON string contents (any length, and each count of
        characters left), which every schema's strings share (about 1 s for a 129k vocabulary);
        the automata of the JSON Schema formats, which depend on no schema (~0.1 s); the
        bounded any-JSON value's automaton with the masks of its first states (~0.5 s); the
        Unicode general categories of `\\p{..}` patterns (~0.2 s); and the schema front end's
        tables: the registry of meta-schemas and each draft's meta-schema check (~0.1 s, else
        the process's first schema pays them)."""
        from formwork.grammar.json_schema.automata import SHARED
        from formwork.grammar.unicode_properties import warm_categories
        from formwork.schemas import load_schema
        from formwork.schemas.drafts import ALL_DRAFTS

        self.mask_cache.prepare()
        vocab_tables(self.vocab)  # which tokens can end an item of a unique array (uniqueItems)
        SHARED.warm_string_masks(self.mask_cache)
        SHARED.warm_formats()
        SHARED.warm_any_values(self.mask_cache)
        warm_categories()
        for draft in ALL_DRAFTS:
            load_schema({"$schema": draft.uri, "type": "object"})

    def _budget(self) -> CompileBudget:
        """The budget of the compile running on this thread (`CompileBudget.active`, e.g. a
        server request's), else a fresh copy of this compiler's."""
        return active_budget() or self.budget.fresh()

    def compile_grammar(self, grammar: Node | Grammar, spec: Hashable | None = None) -> CompiledGrammar:
        """Compile an IR node or Grammar; `spec` (default: the IR itself) is the cache key."""
        if not isinstance(grammar, (Node, Grammar)):
            raise GrammarError(f"expected an IR Node or Grammar, got {type(grammar).__name__}")
        return self._cached(("ir", grammar) if spec is None else spec, lambda: grammar)

    def compile_regex(self, pattern: str, search: bool = False) -> CompiledGrammar:
        """Full-match regex (search=True: match anywhere unless anchored)."""
        return self._cached(("regex", pattern, search), lambda: regex(pattern, search=search))

    def compile_choice(self, choices: Sequence[str]) -> CompiledGrammar:
        """Exactly one of the given strings."""
        if isinstance(choices, str) or not choices:
            raise GrammarError("compile_choice needs a non-empty list of strings")
        for c in choices:
            if not isinstance(c, str):
                raise GrammarError(f"choices must be strings, got {type(c).__name__}")
        return self._cached(("choice", tuple(choices)), lambda: alt(*(lit(c) for c in choices)))

    def compile_ebnf(self, text: str, start: str = "start") -> CompiledGrammar:
        """A Lark grammar (or GBNF); recursive rules compile to the Earley automaton."""
        from formwork.grammar.cfg.ebnf import ebnf_grammar

        return self._cached(("ebnf", text, start), lambda: ebnf_grammar(text, start))

    def _cached(self, key: Hashable, build: Callable[[], Node | Grammar]) -> CompiledGrammar:
        if self.cache_enabled:
            with self._lock:
                got = self._grammars.get(key)
                if got is not None:
                    self._grammars.move_to_end(key)
                    return got
        start = time.perf_counter()
        budget = self._budget()
        with budget.active():  # parsing an EBNF grammar checks it too
            dfa = compile_automaton(build(), budget)
        if isinstance(dfa, ConfigDFA):  # a recursive grammar: its terminals' first tables
            dfa.masks.warm(self.mask_cache)
        compiled = CompiledGrammar(dfa, self.vocab, self.mask_cache, time.perf_counter() - start, key)
        if self.cache_enabled:
            with self._lock:
                self._grammars[key] = compiled
                if len(self._grammars) > self.cache_size:
                    self._grammars.popitem(last=False)
        return compiled

    def clear_cache(self) -> None:
        self._grammars.clear()


_DEFAULT_COMPILERS: "weakref.WeakKeyDictionary[Vocabulary, GrammarCompiler]" = weakref.WeakKeyDictionary()


def default_compiler(vocab: Vocabulary) -> GrammarCompiler:
    """The shared compiler (grammar and mask caches) of a vocabulary."""
    compiler = _DEFAULT_COMPILERS.get(vocab)
    if compiler is None:
        compiler = _DEFAULT_COMPILERS[vocab] = GrammarCompiler(vocab)
    return compiler


def compile_grammar(grammar: Node | Grammar, vocab: Vocabulary) -> CompiledGrammar:
    return default_compiler(vocab).compile_grammar(grammar)


def compile_regex(pattern: str, vocab: Vocabulary, search: bool = False) -> CompiledGrammar:
    return default_compiler(vocab).compile_regex(pattern, search=search)


def compile_choice(choices: Sequence[str], vocab: Vocabulary) -> CompiledGrammar:
    return default_compiler(vocab).compile_choice(choices)


def compile_ebnf(text: str, vocab: Vocabulary, start: str = "start") -> CompiledGrammar:
    return default_compiler(vocab).compile_ebnf(text, start=start)
