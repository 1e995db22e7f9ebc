"""On the embedded demo model (trained on JSON and chat text) constrained outputs are complete and valid:
50 JSON Schemas plus regexes, an EBNF grammar and choices, batched with unconstrained requests, greedy
and temperature 1.0, jump-forward on and off, preemption forced. The model finishes nearly every
document, so most outputs must end with `stop` and validate in full; the few cut by `max_tokens` are
valid prefixes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_structured import check_outputs, make_requests, run_requests  # noqa: E402

from formwork.core.demo import demo_model_dir  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402


@pytest.mark.parametrize("temperature, jump", [(0.0, True), (1.0, False)], ids=["greedy-jump", "t1-nojump"])
def test_demo_model_outputs_are_complete_and_valid(temperature, jump):
    # 40 blocks of 8 tokens for 16 running sequences of up to ~170 tokens: preemption is certain
    engine = LLMEngine(demo_model_dir(), block_size=8, num_gpu_blocks=40, max_num_seqs=16, enable_jump_forward=jump)
    requests = make_requests(temperature, max_tokens=160)
    done = run_requests(engine, requests)
    reasons = check_outputs(engine, done, requests)
    constrained = sum(reasons.values())
    assert reasons.get("stop", 0) >= 0.9 * constrained, reasons
    assert engine.metrics.num_preemptions > 0
    assert (engine.structured_output.stats.num_jump_forward_tokens > 0) == jump
