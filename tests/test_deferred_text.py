"""FINAL_ONLY requests without stop strings decode their text only when it is read (`NewTokens`), constrained
ones (without jump-forward) too: their final texts, tokens and finish reasons must equal the CUMULATIVE run's,
also when aborted mid-way."""

from __future__ import annotations

import sys
from concurrent.futures import wait
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import RequestOutputKind, SamplingParams  # noqa: E402


@pytest.fixture(scope="module")
def engine():
    return LLMEngine(tiny_model_dir("llama"), block_size=4, max_num_seqs=8, enable_prefix_caching=False,
                     enable_jump_forward=False)


def _run(engine: LLMEngine, kind: RequestOutputKind, requests: list[dict], abort_at: dict[int, int], tag: str):
    """Final outputs by request index; `abort_at[i]` aborts request i before that step."""
    for i, spec in enumerate(requests):
        engine.add_request(f"{tag}{i}", spec["prompt"], SamplingParams(output_kind=kind, **spec["params"]))
    # every grammar compiled before the first step, so an abort comes at the same token in both runs
    wait([r.structured_output.future for r in engine.requests.values() if r.structured_output is not None])
    finals, step = {}, 0
    while engine.has_unfinished_requests():
        for i, at in abort_at.items():
            if at == step:
                output = engine.abort_request(f"{tag}{i}")
                if output is not None:
                    finals[output.request_id] = output
        for output in engine.step():
            if output.finished:
                finals[output.request_id] = output
        step += 1
    return {int(rid[len(tag):]): [(c.text, c.token_ids, c.finish_reason, c.stop_reason) for c in out.outputs]
            for rid, out in finals.items()}


request = st.fixed_dictionaries({
    "prompt": st.lists(st.integers(3, 300), min_size=1, max_size=12),
    "params": st.fixed_dictionaries({
        "n": st.integers(1, 2), "max_tokens": st.integers(3, 24), "ignore_eos": st.booleans(),
        "temperature": st.sampled_from([0.0, 1.0]), "seed": st.integers(0, 2**31),
        "stop_token_ids": st.lists(st.integers(3, 300), max_size=3), "min_tokens": st.integers(0, 3)}),
})


@settings(max_examples=12, deadline=None)
@given(requests=st.lists(request, min_size=1, max_size=5), aborts=st.dictionaries(st.integers(0, 4), st.integers(1, 20)))
def test_final_only_texts_equal_cumulative_ones(engine, requests, aborts):
    aborts = {i: at for i, at in aborts.items() if i < len(requests)}
    cumulative = _run(engine, RequestOutputKind.CUMULATIVE, requests, aborts, "c")
    final_only = _run(engine, RequestOutputKind.FINAL_ONLY, requests, aborts, "f")
    assert final_only == cumulative


SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}},
          "required": ["name", "n"], "additionalProperties": False}
constrained_request = st.fixed_dictionaries({
    "prompt": st.lists(st.integers(3, 300), min_size=1, max_size=12),
    "params": st.fixed_dictionaries({
        "n": st.integers(1, 2), "max_tokens": st.integers(3, 40), "temperature": st.sampled_from([0.0, 1.0]),
        "seed": st.integers(0, 2**31), "structured_outputs": st.sampled_from([{"json": SCHEMA}, None])}),
})


@settings(max_examples=8, deadline=None)
@given(requests=st.lists(constrained_request, min_size=1, max_size=5),
       aborts=st.dictionaries(st.integers(0, 4), st.integers(1, 30)))
def test_constrained_final_only_texts_equal_cumulative_ones(engine, requests, aborts):
    aborts = {i: at for i, at in aborts.items() if i < len(requests)}
    cumulative = _run(engine, RequestOutputKind.CUMULATIVE, requests, aborts, "cc")
    final_only = _run(engine, RequestOutputKind.FINAL_ONLY, requests, aborts, "cf")
    assert final_only == cumulative
