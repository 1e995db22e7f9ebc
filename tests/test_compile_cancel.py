"""Aborting a request cancels its compile: a running one stops at its next budget check with
`CompileCancelledError` (long before its budget), and the backend lists no compile afterwards."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from test_server_compile_isolation import budget_bound_schema  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.core.sampling_params import SamplingParams  # noqa: E402
from formwork.grammar.budget import CompileCancelledError  # noqa: E402


def test_abort_stops_the_running_compile():
    engine = LLMEngine(tiny_model_dir("llama"), block_size=8, grammar_compile_budget_s=600.0)
    so = engine.structured_output
    backend = so.backend
    engine.add_request("heavy", "Answer:", SamplingParams(structured_outputs={"json": budget_bound_schema()}))
    job = engine.requests["heavy"].structured_output.job
    deadline = time.monotonic() + 60
    while not backend.running():  # until the compile has started
        assert time.monotonic() < deadline and not job.future.done(), "the compile never ran"
        time.sleep(0.01)
    engine.abort_request("heavy")
    assert isinstance(job.future.exception(timeout=60), CompileCancelledError)
    assert backend.running() == [] and so.compile_status()["running"] == 0
    assert not engine.has_unfinished_requests()
