"""A sampler wrapper that leans a request's first tokens toward a script, for end-to-end tests of
constraints whose interesting part a random tiny model would seldom write (a trigger, `</think>`).

    engine.sampler = ScriptedSampler(engine.sampler, {"req-1": "thinking</think>"}, engine.tokenize)

The script of key None applies to every request without its own (e.g. a server's requests, whose ids
the test does not know).  The script's tokens get a large logit bonus before the token mask applies,
so a masked token of the script is never sampled: the constraint, not the script, decides.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from conftest_structured import run_requests

BONUS = 60.0


class ScriptedSampler:
    """Calls `sampler` after adding `BONUS` to the logit of the next script token of each row."""

    def __init__(self, sampler, scripts: dict[str | None, str], tokenize: Callable[[str], list[int]]):
        self.sampler = sampler
        self.scripts = {request_id: _without_bos(tokenize(text), tokenize) for request_id, text in scripts.items()}

    def __call__(self, logits: torch.Tensor, seqs, *args, **kwargs):
        for row, seq in enumerate(seqs):
            script = self.scripts.get(seq.request_id, self.scripts.get(None, []))
            if seq.num_output_tokens < len(script):
                logits[row, script[seq.num_output_tokens]] += BONUS
        return self.sampler(logits, seqs, *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.sampler, name)


def _without_bos(ids: list[int], tokenize: Callable[[str], list[int]]) -> list[int]:
    """`ids` without the special tokens the tokenizer puts before any text."""
    lead = len(tokenize(""))
    return ids[lead:]


def run_scripted(engine: Any, prompt: str, requests: dict[str, Any], scripts: dict[str, str]) -> dict:
    """Run `requests` (id -> SamplingParams) on `prompt` to the end with the engine's sampler leaning
    toward `scripts`; the finished outputs by request id."""
    plain = engine.sampler
    engine.sampler = ScriptedSampler(plain, scripts, engine.tokenize)
    try:
        return run_requests(engine, {request_id: (prompt, params) for request_id, params in requests.items()})
    finally:
        engine.sampler = plain
