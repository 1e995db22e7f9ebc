"""`/metrics` by prometheus_client: two in-process servers, real requests, the scrape parsed by
`prometheus_client.parser.text_string_to_metric_families` and checked against the responses' usage."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

sys.path.insert(0, str(Path(__file__).parent))
from conftest_server import in_process_server  # noqa: E402

from formwork.core.config import EngineConfig  # noqa: E402
from formwork.server.metrics import METRICS, family  # noqa: E402

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def serve(name: str) -> Iterator[str]:
    """An in-process server on the tiny Llama, served as `name`; yields its URL."""
    with in_process_server(EngineConfig(max_num_seqs=4), name) as (url, _engine):
        yield url


@pytest.fixture(scope="module")
def first():
    yield from serve("first")


@pytest.fixture(scope="module")
def second():
    yield from serve("second")


def scrape(url: str, model: str) -> tuple[dict[str, str], Samples]:
    """(metric family -> type, samples keyed by (name, labels other than model_name)); every sample
    must carry `model_name=model`."""
    response = httpx.get(f"{url}/metrics", timeout=10)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    types, samples = {}, {}
    for metric in text_string_to_metric_families(response.text):
        types[metric.name] = metric.type
        for s in metric.samples:
            assert s.labels.get("model_name") == model, s
            labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "model_name"))
            samples[(s.name, labels)] = s.value
    return types, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


def chat(url: str, model: str, max_tokens: int, **extra) -> dict:
    body = {"model": model, "messages": [{"role": "user", "content": "Say something."}], "max_tokens": max_tokens,
            "temperature": 0, **extra}
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def wait_idle(url: str, model: str) -> Samples:
    """Samples once no request runs (a finished response can precede the engine's bookkeeping)."""
    deadline = time.monotonic() + 10
    while True:
        _, samples = scrape(url, model)
        if value(samples, "formwork:num_requests_running") == 0 or time.monotonic() > deadline:
            return samples
        time.sleep(0.02)


def test_every_declared_metric_is_scraped_with_its_type(first):
    types, samples = scrape(first, "first")
    for name, (kind, _) in METRICS.items():
        base = name.removesuffix("_total") if kind == "counter" else name
        assert types.get(base) == kind, (name, types.get(base))
    for name in ("formwork:time_to_first_token_seconds", "formwork:grammar_mask_step_seconds"):
        buckets = sorted(((float(dict(labels)["le"]), v) for (n, labels), v in samples.items()
                          if n == f"{name}_bucket"))
        counts = [v for _, v in buckets]
        assert counts == sorted(counts) and buckets[-1] == (float("inf"), value(samples, f"{name}_count"))


def test_real_requests_move_the_metrics_by_what_they_did(first):
    before = wait_idle(first, "first")
    plain = [chat(first, "first", 5, ignore_eos=True, seed=i) for i in range(2)]
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    typed = chat(first, "first", 40, response_format={"type": "json_schema",
                                                      "json_schema": {"name": "ok", "schema": schema}})
    after = wait_idle(first, "first")
    replies = [*plain, typed]

    reasons = {"length": 2 + (typed["choices"][0]["finish_reason"] == "length"),
               "stop": typed["choices"][0]["finish_reason"] == "stop"}
    for reason, count in reasons.items():
        assert delta(before, after, "formwork:request_success_total", finished_reason=reason) == count
    assert delta(before, after, "formwork:prompt_tokens_total") == sum(r["usage"]["prompt_tokens"] for r in replies)
    generated = sum(r["usage"]["completion_tokens"] for r in replies)
    assert delta(before, after, "formwork:generation_tokens_total") == generated
    for name in ("time_to_first_token_seconds", "e2e_request_latency_seconds", "request_queue_time_seconds",
                 "request_prompt_tokens", "request_generation_tokens"):
        assert delta(before, after, f"formwork:{name}_count") == 3, name
    assert delta(before, after, "formwork:request_generation_tokens_sum") == generated
    several = sum(r["usage"]["completion_tokens"] >= 2 for r in replies)
    assert delta(before, after, "formwork:time_per_output_token_seconds_count") == several
    ttft = delta(before, after, "formwork:time_to_first_token_seconds_sum")
    assert 0 < ttft <= delta(before, after, "formwork:e2e_request_latency_seconds_sum")
    # the constrained request: checked by the server, compiled by the engine (a cache hit), masked per step
    assert delta(before, after, "formwork:constraint_check_seconds_count") == 1
    assert delta(before, after, "formwork:grammar_compile_seconds_count") == 1
    steps = delta(before, after, "formwork:grammar_mask_step_seconds_count")
    assert 1 <= steps <= typed["usage"]["completion_tokens"] + 1
    assert delta(before, after, "formwork:grammar_mask_step_seconds_sum") > 0
    assert delta(before, after, "formwork:grammar_mask_rows_total") == steps
    # at rest
    for gauge in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc", "kv_cache_blocks_used",
                  "grammar_compiles_queued", "grammar_compiles_running"):
        assert value(after, f"formwork:{gauge}") == 0, gauge
    assert value(after, "formwork:kv_cache_blocks_total") > 0


def test_each_server_has_its_own_registry(first, second):
    _, before = scrape(second, "second")
    chat(first, "first", 3, ignore_eos=True)
    _, after = scrape(second, "second")
    assert delta(before, after, "formwork:generation_tokens_total") == 0
    assert delta(before, after, "formwork:time_to_first_token_seconds_count") == 0


def test_families_escape_labels_and_round_trip_through_the_parser():
    class Fixed(Collector):
        def collect(self):
            yield family("formwork:request_success_total", "counter", "finished", {"stop": 3, "length": 1}, 'my"m')
            yield family("formwork:kv_cache_usage_perc", "gauge", "usage", 0.25, 'my"m')
            yield family("formwork:time_to_first_token_seconds", "histogram", "ttft",
                         {"buckets": [(0.1, 1), (float("inf"), 2)], "sum": 0.5, "count": 2}, 'my"m')

    registry = CollectorRegistry()
    registry.register(Fixed())
    parsed = {(s.name, tuple(sorted(s.labels.items()))): s.value
              for metric in text_string_to_metric_families(generate_latest(registry).decode())
              for s in metric.samples}
    label = ("model_name", 'my"m')
    assert parsed[("formwork:request_success_total", (("finished_reason", "stop"), label))] == 3
    assert parsed[("formwork:kv_cache_usage_perc", (label,))] == 0.25
    assert parsed[("formwork:time_to_first_token_seconds_bucket", (("le", "0.1"), label))] == 1
    assert parsed[("formwork:time_to_first_token_seconds_count", (label,))] == 2
