"""Compiling lowered schemas: shared sub-automata plus an optional compiled-grammar cache."""
from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from formwork.grammar.budget import active_budget
from formwork.grammar.cfg.configs import ConfigDFA
from formwork.grammar.compiler import CompiledGrammar, GrammarCompiler
from formwork.grammar.gc_pause import paused_gc
from formwork.grammar.ir import Grammar
from formwork.grammar.ir_untrack import untrack_ir
from formwork.grammar.json_schema.automata import SHARED
from formwork.grammar.json_schema.unique_arrays import settle_unique_arrays

_CACHES: "weakref.WeakKeyDictionary[GrammarCompiler, OrderedDict]" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def compile_cached(compiler: GrammarCompiler, key: Callable[[], Hashable], lower: Callable[[], Any]
                   ) -> CompiledGrammar:
    """The grammar for `key()` (made only when `compiler.cache_enabled`): from the cache, else
    lowered (`lower()` returns an object with `.node` and `.warnings`) and compiled with the
    shared sub-automata under the budget of the compile running on this thread (see
    `CompileBudget.active`; else a fresh copy of the compiler's) and its token-mask cache.  The collector stays
    paused from lowering to the automaton, so it resumes (and scans what was made) once."""
    spec = key() if compiler.cache_enabled else None
    with _LOCK:
        cache = _CACHES.setdefault(compiler, OrderedDict())
        if spec is not None and spec in cache:
            cache.move_to_end(spec)
            return cache[spec]
    start = time.perf_counter()
    budget = active_budget() or compiler.budget.fresh()  # the caller's (a server request's), if any
    with paused_gc(), budget.active():  # lowering and $ref expansion check it too
        lowered = lower()
        node, unique = lowered.node, None
        if getattr(lowered, "unique_arrays", ()):  # arrays whose items the matcher compares
            node, unique = settle_unique_arrays(
                lowered, lambda tagged: SHARED.compile_cfg(tagged, budget) if isinstance(tagged, Grammar)
                else SHARED.compile(tagged, budget, keep=False), budget)
        if isinstance(node, Grammar):  # recursive schema: the Earley automaton
            dfa = SHARED.compile_cfg(node, budget)
        else:
            dfa = SHARED.compile(node, budget, keep=False)  # no compiled-grammar cache here
        untrack_ir(node)  # what the process-wide tables keep of it is never cyclic garbage
        untrack_ir(lowered.node)  # the same, unless unique arrays were settled
    if isinstance(dfa, ConfigDFA):  # a recursive schema: its terminals' first tables
        dfa.masks.warm(compiler.mask_cache)
    grammar = CompiledGrammar(dfa, compiler.vocab, compiler.mask_cache,
                              time.perf_counter() - start, spec)
    grammar.warnings = list(lowered.warnings)
    grammar.unique = unique
    if spec is not None:
        with _LOCK:
            cache[spec] = grammar
            if len(cache) > compiler.cache_size:
                cache.popitem(last=False)
    return grammar
