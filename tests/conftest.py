"""Suite-wide settings: one torch thread here and in spawned servers; deterministic hypothesis in CI.

On a small shared CPU, tiny models run several times faster on one thread than on two
(the threads fight over cores that other processes also use). In CI (`CI=true`) hypothesis draws
the same examples on every run, so a landing never depends on a lucky draw; locally it explores.
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402  (after the thread setting, so spawned children inherit it)
from hypothesis import settings  # noqa: E402

torch.set_num_threads(1)

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="module")
def vocab():
    """The real 129k DeepSeek vocabulary (`conftest_grammar.deepseek_vocab`, built once)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest_grammar import deepseek_vocab

    return deepseek_vocab()


@pytest.fixture(scope="module")
def unsliced(vocab):
    """A mask cache that walks the whole vocabulary through the document: no lexemes, no slices (the
    reference the decomposed masks are checked against)."""
    from formwork.grammar.token_mask import TokenMaskCache

    return TokenMaskCache(vocab, use_lexemes=False, use_slices=False)
