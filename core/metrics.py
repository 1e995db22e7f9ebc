"""Request and engine metrics, with a snapshot under vLLM's Prometheus metric names."""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from typing import Any

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                   7.5, 10.0, 20.0, 40.0, 80.0)
TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)


def now() -> float:
    """The engine's clock (monotonic seconds); every interval is measured with it."""
    return time.monotonic()


@dataclass
class RequestMetrics:
    """Timestamps and counts of one request (all times from `now()`)."""

    arrival_time: float
    num_prompt_tokens: int = 0
    num_generation_tokens: int = 0
    num_cached_tokens: int = 0
    first_scheduled_time: float | None = None
    first_token_time: float | None = None
    last_token_time: float | None = None
    finished_time: float | None = None
    inter_token_latencies: list[float] = field(default_factory=list)

    def on_scheduled(self, t: float) -> None:
        if self.first_scheduled_time is None:
            self.first_scheduled_time = t

    def on_tokens(self, t: float, count: int) -> None:
        """`count` new tokens (over all completions of the request) arrived at time `t`."""
        if self.first_token_time is None:
            self.first_token_time = t
        elif self.last_token_time is not None:
            self.inter_token_latencies.append(t - self.last_token_time)
        self.last_token_time = t
        self.num_generation_tokens += count

    @property
    def queue_time(self) -> float | None:
        return None if self.first_scheduled_time is None else self.first_scheduled_time - self.arrival_time

    @property
    def time_to_first_token(self) -> float | None:
        return None if self.first_token_time is None else self.first_token_time - self.arrival_time

    @property
    def e2e_latency(self) -> float | None:
        return None if self.finished_time is None else self.finished_time - self.arrival_time

    @property
    def time_per_output_token(self) -> float | None:
        """Mean decode time per token after the first (vLLM's TPOT); None with fewer than 2 steps."""
        if not self.inter_token_latencies:
            return None
        return sum(self.inter_token_latencies) / len(self.inter_token_latencies)


class Histogram:
    """A cumulative-bucket histogram (Prometheus semantics)."""

    def __init__(self, buckets: tuple[float, ...]):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)  # last slot is +Inf
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.count += 1

    def snapshot(self) -> dict[str, Any]:
        cumulative, running = [], 0
        for bound, count in zip([*self.buckets, float("inf")], self.counts):
            running += count
            cumulative.append((bound, running))
        return {"type": "histogram", "buckets": cumulative, "sum": self.total, "count": self.count}


class EngineMetrics:
    """Engine-wide counters and histograms, fed by the engine as requests progress and finish."""

    def __init__(self) -> None:
        self.num_preemptions = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.prefix_cache_queries = 0
        self.prefix_cache_hits = 0
        self.request_success: dict[str, int] = {"stop": 0, "length": 0, "abort": 0, "error": 0}
        self.ttft = Histogram(LATENCY_BUCKETS)
        self.inter_token_latency = Histogram(LATENCY_BUCKETS)
        self.e2e_latency = Histogram(LATENCY_BUCKETS)
        self.queue_time = Histogram(LATENCY_BUCKETS)
        self.request_prompt_tokens = Histogram(TOKEN_BUCKETS)
        self.request_generation_tokens = Histogram(TOKEN_BUCKETS)

    def on_prefix_lookup(self, num_query_tokens: int, num_hit_tokens: int) -> None:
        self.prefix_cache_queries += num_query_tokens
        self.prefix_cache_hits += num_hit_tokens

    def on_first_token(self, metrics: RequestMetrics) -> None:
        if metrics.time_to_first_token is not None:
            self.ttft.observe(metrics.time_to_first_token)

    def on_new_tokens(self, count: int, inter_token_latency: float | None) -> None:
        self.generation_tokens += count
        if inter_token_latency is not None:
            self.inter_token_latency.observe(inter_token_latency)

    def on_finished(self, metrics: RequestMetrics, finish_reason: str) -> None:
        self.request_success[finish_reason] = self.request_success.get(finish_reason, 0) + 1
        self.prompt_tokens += metrics.num_prompt_tokens
        self.request_prompt_tokens.observe(metrics.num_prompt_tokens)
        self.request_generation_tokens.observe(metrics.num_generation_tokens)
        if metrics.e2e_latency is not None:
            self.e2e_latency.observe(metrics.e2e_latency)
        if metrics.queue_time is not None:
            self.queue_time.observe(metrics.queue_time)

    def snapshot(self, *, num_running: int, num_waiting: int, num_blocks: int,
                 num_used_blocks: int) -> dict[str, Any]:
        """Everything under vLLM's metric names: gauges/counters as numbers, histograms as dicts."""
        usage = num_used_blocks / num_blocks if num_blocks else 0.0
        return {
            "vllm:num_requests_running": num_running,
            "vllm:num_requests_waiting": num_waiting,
            "vllm:kv_cache_usage_perc": usage,
            "formwork:kv_cache_blocks_used": num_used_blocks,
            "formwork:kv_cache_blocks_total": num_blocks,
            "vllm:prefix_cache_queries_total": self.prefix_cache_queries,
            "vllm:prefix_cache_hits_total": self.prefix_cache_hits,
            "vllm:num_preemptions_total": self.num_preemptions,
            "vllm:prompt_tokens_total": self.prompt_tokens,
            "vllm:generation_tokens_total": self.generation_tokens,
            "vllm:request_success_total": dict(self.request_success),
            "vllm:time_to_first_token_seconds": self.ttft.snapshot(),
            "vllm:inter_token_latency_seconds": self.inter_token_latency.snapshot(),
            "vllm:e2e_request_latency_seconds": self.e2e_latency.snapshot(),
            "vllm:request_queue_time_seconds": self.queue_time.snapshot(),
            "vllm:request_prompt_tokens": self.request_prompt_tokens.snapshot(),
            "vllm:request_generation_tokens": self.request_generation_tokens.snapshot(),
        }
