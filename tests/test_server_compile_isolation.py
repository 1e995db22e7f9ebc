"""No head-of-line blocking on loopback: while one schema's compile runs to its (small) budget and six
more requests compile beside it, a trivial schema's request gets its first token within 1 s, the
budget-bound one is refused with its budget error, and `/health` reports the compile queue."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import in_process_server  # noqa: E402

from formwork.core.config import EngineConfig  # noqa: E402

MODEL = "tiny-isolation"
BUDGET_S = 2.0
TRIVIAL = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def budget_bound_schema() -> dict:
    """Far more than BUDGET_S of compile work: long bounded patterns (each an automaton product
    with a length bound) and intersections of patterns (each two subset constructions and a
    product of thousands of states)."""
    bounded = {f"p{i}": {"type": "string", "pattern": f"^[a-{chr(ord('h') + i % 15)}]+x?{i}$", "maxLength": 1500 + i}
               for i in range(40)}
    crossed = {}
    for i in range(40):
        x, y = chr(97 + i % 13), chr(110 + i % 13)
        crossed[f"q{i}"] = {"type": "string", "allOf": [{"pattern": f"^[{x}{y}]*{x}[{x}{y}]{{{13 + i % 3}}}$"},
                                                        {"pattern": f"^[{x}{y}]*{y}[{x}{y}]{{{12 + i % 2}}}$"}]}
    return {"type": "object", "properties": {**bounded, **crossed}}


def moderate_schema(i: int) -> dict:
    return {"type": "object", "properties": {f"name{i}": {"type": "string", "maxLength": 8},
                                             f"count{i}": {"type": "integer", "minimum": 0}},
            "required": [f"name{i}"]}


@pytest.fixture(scope="module")
def served():
    with in_process_server(EngineConfig(max_num_seqs=16, grammar_compile_budget_s=BUDGET_S),
                           MODEL) as (url, _engine):
        yield url


def _body(schema: dict, stream: bool) -> dict:
    return {"model": MODEL, "prompt": "Answer:", "max_tokens": 8, "temperature": 0, "stream": stream,
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}}


async def _first_token_seconds(client: httpx.AsyncClient, url: str) -> float:
    start = time.perf_counter()
    async with client.stream("POST", url, json=_body(TRIVIAL, True)) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if '"text":' in line and '"text":""' not in line:
                return time.perf_counter() - start
    raise AssertionError("the trivial request streamed no token")


def test_trivial_schema_is_not_held_behind_a_budget_bound_compile(served):
    url = f"{served}/v1/completions"

    async def run():
        async with httpx.AsyncClient(timeout=120) as client:
            heavy = asyncio.create_task(client.post(url, json=_body(budget_bound_schema(), False)))
            deadline = time.monotonic() + 10
            while True:  # until the budget-bound compile is running
                health = await client.get(f"{served}/health")
                queue = health.json()["compile_queue"]
                if queue["running"] >= 1:
                    break
                assert time.monotonic() < deadline, "the budget-bound compile never started"
                await asyncio.sleep(0.01)
            assert health.status_code == 200 and queue["healthy"] and queue["stuck"] == 0
            others = [asyncio.create_task(client.post(url, json=_body(moderate_schema(i), False)))
                      for i in range(6)]
            first_token = await _first_token_seconds(client, url)
            return first_token, await heavy, await asyncio.gather(*others)

    first_token, heavy, others = asyncio.run(run())
    assert first_token < 1.0
    assert heavy.status_code == 400 and "time budget" in heavy.json()["error"]["message"]
    assert [r.status_code for r in others] == [200] * 6
    queue = httpx.get(f"{served}/health").json()["compile_queue"]
    assert queue["running"] == 0 and queue["queued"] == 0


def test_a_client_that_leaves_cancels_its_pre_admission_compile(served):
    """The budget-bound schema's client disconnects while its constraint is checked: the check's
    compile stops at once (well before its 2 s budget of CPU), not at the budget."""
    url = f"{served}/v1/completions"

    async def run() -> float:
        async with httpx.AsyncClient(timeout=120) as client:
            heavy = asyncio.create_task(client.post(url, json=_body(budget_bound_schema(), False)))
            deadline = time.monotonic() + 10
            while (await client.get(f"{served}/health")).json()["compile_queue"]["running"] < 1:
                assert time.monotonic() < deadline, "the budget-bound compile never started"
                await asyncio.sleep(0.01)
            heavy.cancel()  # closes the connection: the server sees the client leave
            with pytest.raises(asyncio.CancelledError):
                await heavy
            left = time.monotonic()
            while (await client.get(f"{served}/health")).json()["compile_queue"]["running"] > 0:
                assert time.monotonic() - left < BUDGET_S, "the compile ran on after its client left"
                await asyncio.sleep(0.01)
            return time.monotonic() - left

    stopped_after = asyncio.run(run())
    assert stopped_after < BUDGET_S / 2
