"""Client disconnects abort engine requests at once: no request left running, the KV pool back to empty."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import AUTH, MODEL, TINY_SERVER_ARGS, shared_server  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

from prometheus_client.parser import text_string_to_metric_families

LABEL = f'{{model_name="{MODEL}"}}'
ABORTED = f'formwork:request_success_total{{finished_reason="abort",model_name="{MODEL}"}}'


def metrics(server) -> dict[str, float]:
    """`/metrics` parsed by prometheus_client: `{'name{label="value",...}': value}`, labels sorted."""
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return {s.name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items())) + "}": s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def wait_until_idle(server, timeout: float = 15.0) -> dict[str, float]:
    """Metrics once nothing runs or waits and no KV block is used (fails after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        m = metrics(server)
        idle = (m[f"formwork:num_requests_running{LABEL}"], m[f"formwork:num_requests_waiting{LABEL}"],
                m[f"formwork:kv_cache_blocks_used{LABEL}"]) == (0, 0, 0)
        if idle or time.monotonic() > deadline:
            return m
        time.sleep(0.05)


def chat_body(i: int, max_tokens: int, stream: bool = True, n: int = 1) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": f"request number {i}"}], "n": n,
            "max_tokens": max_tokens, "stream": stream, "seed": i, "ignore_eos": True}


# Long enough that a non-streaming request cannot finish before its client gives up, however fast the engine
# gets: 2,000 decode steps take seconds, where 230 (the default tiny model's context) once fit in the client's
# 0.5 s read timeout and the request completed instead of being aborted.
LONG_CONTEXT = 2048
LONG_MAX_TOKENS = 2000


@pytest.fixture(scope="module")
def server():
    return shared_server(tiny_model_dir("llama", max_position_embeddings=LONG_CONTEXT), *TINY_SERVER_ARGS)


async def _stream(client: httpx.AsyncClient, url: str, i: int, drop_after: int | None, max_tokens: int):
    """Read a chat stream; with `drop_after`, close the connection after that many events."""
    events = 0
    async with client.stream("POST", f"{url}/v1/chat/completions", json=chat_body(i, max_tokens)) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                events += 1
                if drop_after is not None and events >= drop_after:
                    return "dropped", events
                if line == "data: [DONE]":
                    return "done", events
    return "eof", events


def test_dropped_streams_are_aborted_and_free_their_blocks(server):
    before = wait_until_idle(server)

    async def run():
        async with httpx.AsyncClient(timeout=60, headers=AUTH) as client:
            keepers = [asyncio.create_task(_stream(client, server.url, i, None, 60)) for i in range(10)]
            droppers = [asyncio.create_task(_stream(client, server.url, 100 + i, 3, 230)) for i in range(10)]
            dropped = await asyncio.gather(*droppers)
            return dropped, await asyncio.gather(*keepers)

    dropped, kept = asyncio.run(run())
    assert [r[0] for r in dropped] == ["dropped"] * 10
    assert [r[0] for r in kept] == ["done"] * 10
    after = wait_until_idle(server)
    assert after[f"formwork:num_requests_running{LABEL}"] == 0
    assert after[f"formwork:kv_cache_blocks_used{LABEL}"] == 0
    assert after[f"formwork:kv_cache_usage_perc{LABEL}"] == 0
    # the 10 dropped streams (230 tokens each) were aborted, not run to the end
    assert after.get(ABORTED, 0) - before.get(ABORTED, 0) == 10
    generated = after[f"formwork:generation_tokens_total{LABEL}"] - before[f"formwork:generation_tokens_total{LABEL}"]
    assert generated < 10 * 60 + 10 * 230


def test_non_streaming_disconnect_aborts(server):
    before = wait_until_idle(server)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.url}/v1/chat/completions", json=chat_body(7, LONG_MAX_TOKENS, stream=False, n=8), headers=AUTH,
                   timeout=httpx.Timeout(60, read=0.5))
    after = wait_until_idle(server, timeout=5.0)
    assert after[f"formwork:kv_cache_blocks_used{LABEL}"] == 0
    assert after.get(ABORTED, 0) - before.get(ABORTED, 0) == 1
    generated = after[f"formwork:generation_tokens_total{LABEL}"] - before[f"formwork:generation_tokens_total{LABEL}"]
    assert generated < 8 * LONG_MAX_TOKENS
    assert "unhandled error" not in server.log()  # the handler noticed the disconnect cleanly
