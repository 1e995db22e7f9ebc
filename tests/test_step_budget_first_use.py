"""A mask step's budget is not charged for the per-vocabulary tables its first use builds.

An unprepared `GrammarCompiler` (offline use, tests) builds the vocabulary's slice tables on its first
mask: ~0.5 s of CPU for the 129k DeepSeek vocabulary, and seconds of wall time on a loaded machine.
That is the process's set-up, not the step's work: under a 0.2 s step budget the first mask must
still be computed (it was a GrammarBudgetError before), and later masks keep the budget."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_vocab, unpack_mask  # noqa: E402

from formwork.grammar import allocate_token_bitmask  # noqa: E402
from formwork.grammar.compiler import GrammarCompiler  # noqa: E402
from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

SCHEMA = {"anyOf": [{"type": "null"}, {"type": "object", "required": ["k"]}]}


def test_first_mask_of_an_unprepared_compiler_keeps_its_step_budget_for_its_own_work():
    vocab = deepseek_vocab()
    compiler = GrammarCompiler(vocab, cache_enabled=False)  # its mask cache has no slice tables yet
    assert "token_slice" not in vars(compiler.mask_cache)
    grammar = compile_json_schema(SCHEMA, vocab, compiler=compiler, max_nesting_depth=1)
    matcher = grammar.matcher(max_step_seconds=0.2)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    assert "token_slice" in vars(compiler.mask_cache)
    allowed = {vocab.token_bytes[t] for t in np.flatnonzero(unpack_mask(bitmask[0], vocab.vocab_size))}
    assert b"null" in allowed and b"{" in allowed and b"[" not in allowed
