"""The mask step budget (`grammar_step_budget_s`) is per request: a request whose mask would take
longer fails alone, in the same batch as a constrained request whose masks are at hand, which goes on
as if alone (so one slow mask never holds the batch past the budget)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest_structured import run_requests  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402

KNOWN = {"json": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}
FRESH = {"regex": r"zq[0-9]{2}(zq|qz)"}


def _run(engine: LLMEngine, specs: dict) -> dict:
    return run_requests(engine, {request_id: ("Answer:", SamplingParams(structured_outputs=spec, temperature=0.0,
                                                                        max_tokens=12))
                                 for request_id, spec in specs.items()})


def test_slow_mask_fails_its_request_alone_beside_a_constrained_one():
    engine = LLMEngine(tiny_model_dir("llama"), block_size=8)
    alone = _run(engine, {"first": KNOWN})["first"]  # its masks are computed (and cached) here
    assert alone.error is None
    engine.structured_output.step_max_seconds = 1e-9  # any mask still to compute is now over budget
    done = _run(engine, {"known": KNOWN, "fresh": FRESH})
    assert done["fresh"].outputs[0].finish_reason == "error"
    assert "GrammarBudgetError" in done["fresh"].error and "step budget" in done["fresh"].error
    assert done["known"].error is None
    assert done["known"].outputs[0].token_ids == alone.outputs[0].token_ids
    assert engine.block_manager.num_used_blocks == 0
