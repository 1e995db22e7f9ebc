"""A matcher's next-token mask, and the tokens `accept_token` takes, as boolean arrays over the
vocabulary: tests compare the two (a mask is exact when they are equal); and compiling a random
schema whose language may be empty."""
from __future__ import annotations

import numpy as np

from formwork.grammar.compiler import GrammarCompiler, allocate_token_bitmask
from formwork.grammar.errors import EmptyLanguageError
from formwork.grammar.json_schema import compile_json_schema


def compile_unless_empty(schema, vocab):
    """The schema's grammar (fresh compiler), or None where its language is empty (minItems over a
    small domain of distinct items); any other error is raised."""
    try:
        return compile_json_schema(schema, vocab, compiler=GrammarCompiler(vocab))
    except EmptyLanguageError:
        return None


def mask_of(matcher, vocab_size: int) -> np.ndarray:
    """The tokens the matcher's next-token bitmask allows."""
    bitmask = allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    return np.unpackbits(bitmask.numpy()[0].view(np.uint8), bitorder="little")[:vocab_size].astype(bool)


def accepted_tokens(matcher, vocab_size: int) -> np.ndarray:
    """Whether `accept_token` takes each token (the matcher rolled back after each)."""
    out = np.zeros(vocab_size, dtype=bool)
    for token in range(vocab_size):
        if matcher.accept_token(token):
            out[token] = True
            matcher.rollback(1)
    return out
