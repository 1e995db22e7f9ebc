"""A compile whose thread is starved of the GIL is not failed for time it never ran (issue 23, defect
1): the main thread holds the GIL in C calls (as a Triton JIT does) right after `add_request`, for
longer than the compile budget, and the constrained request still succeeds."""

from __future__ import annotations

import ctypes
import json
import sys
import time
from pathlib import Path

import jsonschema

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

BUDGET_S = 0.25
HOLD_S = 1.0  # two holds of 0.5 s: the compile gets only the short gaps between them
SCHEMA = {"type": "object", "properties": {
    "code": {"type": "string", "pattern": "^[a-m]+x?$", "maxLength": 120},
    "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3}},
    "required": ["code"]}


def _hold_gil(seconds: float) -> None:
    usleep = ctypes.PyDLL(None).usleep  # PyDLL: the call keeps the GIL
    usleep.argtypes = [ctypes.c_uint]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        usleep(500_000)
        time.sleep(0.002)


def test_compile_survives_a_main_thread_that_holds_the_gil():
    engine = LLMEngine(tiny_model_dir("llama"), block_size=8, grammar_compile_budget_s=BUDGET_S)
    engine.structured_output.backend  # noqa: B018 - the vocabulary is built now, not inside the holds
    engine.add_request("r", "Answer:", SamplingParams(structured_outputs={"json": SCHEMA}, temperature=0.0,
                                                      max_tokens=48))
    started = time.monotonic()
    _hold_gil(HOLD_S)
    assert time.monotonic() - started > BUDGET_S  # a wall-clock budget would have run out
    outputs = {}
    while engine.has_unfinished_requests():
        for output in engine.step():
            outputs[output.request_id] = output
    out = outputs["r"]
    assert out.error is None, out.error
    if out.outputs[0].finish_reason == "stop":
        text = engine.structured_output.backend.vocab.decode(out.outputs[0].token_ids).decode("utf-8")
        jsonschema.validate(json.loads(text), SCHEMA)
