"""Compiling constraints for one tokenizer: its `Vocabulary`, a `GrammarCompiler` (with the compiled-
grammar cache, keyed by canonical spec) and the jump-forward tokenizer, shared by every engine in the
process that serves the same tokenizer and logit width.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from typing import Any

from formwork import grammar
from formwork.core.jump_forward import ForcedTokenizer
from formwork.grammar import CompileBudget, CompiledGrammar, GrammarCompiler, Vocabulary
from formwork.grammar.cfg.ebnf import ebnf_grammar
from formwork.grammar.ir import alt, lit
from formwork.grammar.json_schema import lower_json_schema
from formwork.grammar.json_schema.unique_arrays import embedded_node
from formwork.grammar.regex_parser import regex
from formwork.grammar.tags import Lowered, compile_lowered, compile_tags, lower_tags, parse_tags_spec, thinking_then


class GrammarBackend:
    """Vocabulary + compiler for one tokenizer. Compilations run side by side (each under its own
    budget; `running` lists them); `mask_lock` guards the token-mask cache the matchers share."""

    def __init__(self, tokenizer: Any, vocab_size: int, stop_token_ids: list[int]):
        self.vocab = Vocabulary.from_pretrained(tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids)
        self.compiler = GrammarCompiler(self.vocab)
        self.compiler.prepare()  # the per-vocabulary tables, built here, off the engine thread
        self.mask_lock = threading.Lock()
        self._running: dict[int, tuple[CompileBudget, float]] = {}  # id(budget) -> (budget, start)
        self._running_lock = threading.Lock()
        self.forced = ForcedTokenizer(self.vocab, _encoder(tokenizer))

    def compile(self, spec: dict[str, Any], max_seconds: float | None = None, *,
                budget: CompileBudget | None = None) -> CompiledGrammar:
        """Compile one `structured_outputs` spec (cached by its canonical form; with a `reasoning`
        key set, free thinking up to `</think>` comes before the constraint) under `budget`
        (default: `max_seconds` of the compile's own CPU time; cancel the budget to stop it).
        Raises `GrammarError`."""
        if budget is None:
            budget = CompileBudget() if max_seconds is None else CompileBudget(max_seconds=max_seconds)
        with self._running_lock:
            self._running[id(budget)] = (budget, time.monotonic())
        try:
            with budget.active():  # the compiler and the schema lowering run under it
                return _compile(spec, self.vocab, self.compiler)
        finally:
            with self._running_lock:
                del self._running[id(budget)]

    def running(self) -> list[tuple[CompileBudget, float]]:
        """(budget, monotonic start) of each compile in progress, from any thread."""
        with self._running_lock:
            return list(self._running.values())


def _compile(spec: dict[str, Any], vocab: Vocabulary, compiler: GrammarCompiler) -> CompiledGrammar:
    if spec.get("reasoning"):  # thinking first (the manager adds this key for `SamplingParams.reasoning`)
        answer = {key: value for key, value in spec.items() if key != "reasoning"}
        key = ("reasoning", json.dumps(answer, sort_keys=True, ensure_ascii=False))
        return compile_lowered(key, lambda: _thinking_then(answer), vocab, compiler)
    if spec.get("json") is not None or spec.get("json_object"):
        return grammar.compile_json_schema(_schema_of(spec), vocab, compiler=compiler, **_json_options(spec))
    if spec.get("regex") is not None:
        return compiler.compile_regex(spec["regex"])
    if spec.get("choice") is not None:
        return compiler.compile_choice(list(spec["choice"]))
    if spec.get("tags") is not None:
        return compile_tags(spec["tags"], vocab, compiler=compiler)
    return compiler.compile_ebnf(spec["grammar"])


def _schema_of(spec: dict[str, Any]) -> Any:
    """The schema of a `json` / `json_object` spec (`json_object`: any JSON object)."""
    return {"type": "object"} if spec.get("json") is None else spec["json"]


def _json_options(spec: dict[str, Any]) -> dict[str, Any]:
    json_object = spec.get("json") is None  # any JSON object, nested without a depth bound
    return {"forbid_additional_properties": bool(spec.get("disable_additional_properties")),
            "whitespace": "compact" if spec.get("disable_any_whitespace") else "default",
            "max_nesting_depth": None if json_object else "auto"}


def _thinking_then(spec: dict[str, Any]) -> Lowered:
    """The IR of free thinking followed by the constraint `spec`."""
    if spec.get("json") is not None or spec.get("json_object"):
        answer = lower_json_schema(_schema_of(spec), **_json_options(spec))
        node = embedded_node(answer, "after reasoning")
        return Lowered(thinking_then(node), answer.warnings)
    if spec.get("tags") is not None:
        answer = lower_tags(parse_tags_spec(spec["tags"]))
        return Lowered(thinking_then(answer.node), answer.warnings)
    if spec.get("regex") is not None:
        node = regex(spec["regex"])
    elif spec.get("choice") is not None:
        node = alt(*(lit(choice) for choice in spec["choice"]))
    else:
        node = ebnf_grammar(spec["grammar"])
    return Lowered(thinking_then(node))


def _encoder(tokenizer: Any):
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return lambda text: backend.encode(text, add_special_tokens=False).ids
    return lambda text: list(tokenizer.encode(text, add_special_tokens=False))


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A content hash of a tokenizer (its tokenizer.json serialisation when it has one)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else repr(sorted(tokenizer.get_vocab().items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_BACKENDS: dict[tuple, GrammarBackend] = {}
_BACKENDS_LOCK = threading.Lock()


def get_backend(tokenizer: Any, vocab_size: int, stop_token_ids: list[int]) -> GrammarBackend:
    """The process-wide backend for this tokenizer, logit width and stop tokens (built on first use)."""
    key = (tokenizer_fingerprint(tokenizer), vocab_size, tuple(sorted(stop_token_ids)))
    with _BACKENDS_LOCK:
        backend = _BACKENDS.get(key)
        if backend is None:
            backend = _BACKENDS[key] = GrammarBackend(tokenizer, vocab_size, stop_token_ids)
        return backend
