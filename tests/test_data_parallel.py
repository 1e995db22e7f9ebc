"""`formwork serve --data-parallel-size 2` on the demo model: two engine replicas on a local Ray Serve
instance behind formwork's routes, driven by the official openai client. One server for the module
(Ray start-up is slow); the replica-killing test runs last."""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import ServerProcess  # noqa: E402

from formwork.core.demo import DEMO_MODEL_NAME

STARTUP_TIMEOUT = 480.0
REPLICAS = (0, 1)


@pytest.fixture(scope="module")
def server():
    with pytest.MonkeyPatch.context() as env:
        # Ray's memory monitor kills workers when the whole machine nears full memory, which on a shared
        # box other jobs cause; only the replica this module kills should die.
        env.setenv("RAY_memory_monitor_refresh_ms", "0")
        server = ServerProcess.start(None, "--data-parallel-size", "2", "--no-warmup", "--kv-cache-memory",
                                     "32MiB", "--max-num-seqs", "16", startup_timeout=STARTUP_TIMEOUT)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0, timeout=120)


def metrics(server) -> dict[str, float]:
    """`/metrics` parsed: `{'name{label="value",...}': value}`, labels sorted, model label dropped."""
    text = httpx.get(f"{server.url}/metrics", timeout=30).text
    return {s.name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()) if k != "model_name") + "}":
            s.value for family in text_string_to_metric_families(text) for s in family.samples}


def per_replica(m: dict[str, float], name: str) -> list[float]:
    return [m[f'{name}{{replica="{i}"}}'] for i in REPLICAS]


def chat(i: int) -> list[dict]:
    return [{"role": "user", "content": f"Request number {i}: describe item {i * 7919 % 1000} briefly."}]


def test_sixteen_concurrent_requests_are_served_by_both_replicas(server, client):
    before = per_replica(metrics(server), "formwork:replica_requests_total")

    def ask(i: int) -> str:
        reply = client.chat.completions.create(model=DEMO_MODEL_NAME, messages=chat(i), max_tokens=12,
                                               temperature=0)
        assert reply.choices[0].finish_reason in ("stop", "length")
        return reply.choices[0].message.content

    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(ask, range(16)))
    assert all(answers)
    after = metrics(server)
    routed = [a - b for a, b in zip(per_replica(after, "formwork:replica_requests_total"), before)]
    assert sum(routed) == 16 and min(routed) > 0, routed
    assert after['formwork:request_success_total{finished_reason="length"}'] + \
        after['formwork:request_success_total{finished_reason="stop"}'] >= 16  # merged over replicas
    health = httpx.get(f"{server.url}/health", timeout=30).json()
    assert health["replicas_serving"] == 2
    assert len({r["pid"] for r in health["replicas"]}) == 2


def test_stream_passes_through_the_replica(client):
    messages = chat(1000)
    whole = client.chat.completions.create(model=DEMO_MODEL_NAME, messages=messages, max_tokens=16, temperature=0)
    stream = client.chat.completions.create(model=DEMO_MODEL_NAME, messages=messages, max_tokens=16,
                                            temperature=0, stream=True)
    chunks = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert len(chunks) > 2
    assert "".join(chunks) == whole.choices[0].message.content


def test_a_repeated_prefix_lands_on_the_replica_that_cached_it(server, client):
    for k in range(3):  # idle replicas take turns, so without affinity the second request would move
        prefix = f"Conversation {k}. " + " ".join(f"The {word} number {k * 31 + j} is here." for j, word in
                                                 enumerate(["first", "second", "third", "fourth", "fifth"]))
        before = metrics(server)
        for ending in (" Now answer A.", " Now answer B."):
            client.completions.create(model=DEMO_MODEL_NAME, prompt=prefix + ending, max_tokens=2, temperature=0)
        after = metrics(server)
        delta = {name: [a - b for a, b in zip(per_replica(after, name), per_replica(before, name))]
                 for name in ("formwork:replica_requests_total", "formwork:replica_prefix_routed_total",
                              "formwork:replica_prefix_cache_hits_total")}
        routed = delta["formwork:replica_requests_total"]
        assert sorted(routed) == [0, 2], delta
        cached_on = routed.index(2)
        assert delta["formwork:replica_prefix_routed_total"][cached_on] == 1, delta
        assert delta["formwork:replica_prefix_cache_hits_total"][cached_on] >= 32, delta  # two blocks or more


def test_a_replica_refusal_reaches_the_client_as_its_api_error(client):
    with pytest.raises(openai.BadRequestError) as refused:  # token ids past the vocabulary: the engine refuses
        client.completions.create(model=DEMO_MODEL_NAME, prompt=[5, 10 ** 6], max_tokens=2)
    assert refused.value.status_code == 400 and "vocabulary" in str(refused.value)


def test_a_client_disconnect_cancels_the_request_on_its_replica(server):
    aborted = 'formwork:request_success_total{finished_reason="abort"}'
    before = metrics(server)[aborted]
    body = {"model": DEMO_MODEL_NAME, "messages": chat(2000), "max_tokens": 500, "ignore_eos": True, "stream": True}
    with httpx.stream("POST", f"{server.url}/v1/chat/completions", json=body, timeout=60) as response:
        events = 0
        for line in response.iter_lines():
            events += line.startswith("data: ")
            if events >= 3:
                break
    deadline = time.monotonic() + 30
    while True:
        m = metrics(server)
        if m[aborted] == before + 1 and m["formwork:num_requests_running{}"] == 0:
            break
        assert time.monotonic() < deadline, (m[aborted], before, m["formwork:num_requests_running{}"])
        time.sleep(0.2)


def test_killing_a_replica_fails_its_requests_and_service_continues(server, client):
    import os
    import signal

    victim = 0
    pid = next(r["pid"] for r in httpx.get(f"{server.url}/health", timeout=30).json()["replicas"]
               if r["replica"] == victim)
    before = per_replica(metrics(server), "formwork:replica_requests_total")
    streaming = threading.Barrier(9)

    def long_stream(i: int) -> str | Exception:
        try:
            stream = client.chat.completions.create(model=DEMO_MODEL_NAME, messages=chat(3000 + i), max_tokens=120,
                                                    temperature=0, stream=True, extra_body={"ignore_eos": True})
            for n, _ in enumerate(stream):
                if n == 1:
                    streaming.wait(timeout=120)
            return "complete"
        except openai.APIError as exc:
            return exc

    with ThreadPoolExecutor(8) as pool:
        results = [pool.submit(long_stream, i) for i in range(8)]
        streaming.wait(timeout=120)  # every stream has its first tokens
        os.kill(pid, signal.SIGKILL)
        outcomes = [future.result(timeout=180) for future in results]  # a hang fails here
    routed = [a - b for a, b in zip(per_replica(metrics(server), "formwork:replica_requests_total"), before)]
    failed = [o for o in outcomes if isinstance(o, Exception)]
    assert len(failed) == routed[victim] > 0, (outcomes, routed)
    assert outcomes.count("complete") == routed[1 - victim] > 0, (outcomes, routed)
    assert all("replica 0" in str(exc) and "lost" in str(exc) for exc in failed), failed
    after = client.chat.completions.create(model=DEMO_MODEL_NAME, messages=chat(4000), max_tokens=4)
    assert after.choices[0].finish_reason in ("stop", "length")
    health = httpx.get(f"{server.url}/health", timeout=30)
    assert health.status_code == 200 and health.json()["replicas_serving"] >= 1
