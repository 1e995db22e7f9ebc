"""Backpressure (full waiting queue -> 503 + Retry-After) and engine death (-> /health 503), on an
in-process uvicorn server around a real engine with one sequence slot and one waiting slot."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import in_process_server  # noqa: E402

from formwork.core.config import EngineConfig

MODEL = "tiny-bp"


@pytest.fixture(scope="module")
def served():
    with in_process_server(EngineConfig(max_num_seqs=1, max_waiting_requests=1), MODEL) as served:
        yield served


def body(i: int, max_tokens: int, stream: bool) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": f"request {i}"}], "max_tokens": max_tokens,
            "stream": stream, "ignore_eos": True}


async def _until_content(lines) -> None:
    """Consume SSE lines until the first non-empty content delta (the request is generating)."""
    async for line in lines:
        if '"content":' in line and '"content":""' not in line:
            return


def test_full_waiting_queue_is_503_with_retry_after(served, monkeypatch):
    url, engine = served
    core = engine.engine.engine
    step = core.step

    def slow_step():  # request 1 must still be running when request 3 arrives, however loaded the box
        time.sleep(0.05)
        return step()

    monkeypatch.setattr(core, "step", slow_step)

    async def run():
        async with httpx.AsyncClient(timeout=60) as client:
            endpoint = f"{url}/v1/chat/completions"
            async with client.stream("POST", endpoint, json=body(1, 230, True)) as running:
                await _until_content(running.aiter_lines())
                async with client.stream("POST", endpoint, json=body(2, 230, True)) as waiting:
                    assert waiting.status_code == 200
                    return await client.post(endpoint, json=body(3, 4, False))

    refused = asyncio.run(run())
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "server_overloaded"
    deadline = time.monotonic() + 10
    while engine.engine.num_waiting or engine.engine.engine.has_unfinished_requests():
        assert time.monotonic() < deadline, "the dropped requests were not aborted"
        time.sleep(0.02)
    assert httpx.post(f"{url}/v1/chat/completions", json=body(4, 2, False), timeout=60).status_code == 200


def test_engine_death_fails_requests_and_health(served):
    url, engine = served
    assert httpx.get(f"{url}/health").status_code == 200

    def broken_step():
        raise RuntimeError("simulated device failure")

    engine.engine.engine.step = broken_step  # the next engine step kills the engine thread
    failed = httpx.post(f"{url}/v1/chat/completions", json=body(5, 4, False), timeout=60)
    assert failed.status_code == 500 and "simulated device failure" in failed.json()["error"]["message"]
    health = httpx.get(f"{url}/health")
    assert health.status_code == 503 and health.json()["error"]["code"] == "engine_dead"
    refused = httpx.post(f"{url}/v1/chat/completions", json=body(6, 4, False), timeout=60)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "engine_dead"
