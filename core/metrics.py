"""Request and engine metrics, with a snapshot under vLLM's Prometheus metric names (`formwork:` prefix)."""

from __future__ import annotations

import bisect
import itertools
import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                   7.5, 10.0, 20.0, 40.0, 80.0)
TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
#: Token-mask fill times of one step: tens of microseconds when cached, milliseconds on a miss.
MASK_BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


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
    """A histogram of observations in cumulative buckets, with Prometheus' meaning (an observation
    counts in every bucket whose upper bound is >= it); each engine keeps its own and a server's registry
    exposes it under a name (see `formwork.server.metrics`). Thread-safe; one observation costs a bisect
    and two additions under a lock (the engine observes once per request per step)."""

    def __init__(self, buckets: tuple[float, ...]):
        self.buckets = buckets
        self._bounds = [float(b) for b in buckets] + [math.inf]
        self._counts = [0] * len(self._bounds)  # per bucket, not cumulative
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self._bounds, value)
        with self._lock:
            self._counts[index] += 1
            self._sum += value

    def observe_many(self, values: list[float]) -> None:
        """`observe` each value, under one lock acquisition."""
        bounds = self._bounds
        indices = [bisect.bisect_left(bounds, value) for value in values]
        with self._lock:
            counts, total = self._counts, self._sum
            for index, value in zip(indices, values):
                counts[index] += 1
                total += value
            self._sum = total

    def snapshot(self) -> dict[str, Any]:
        """`{"type": "histogram", "buckets": [(upper bound, cumulative count), ..., (inf, count)],
        "sum": ..., "count": ...}`."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        buckets = list(zip(self._bounds, itertools.accumulate(counts)))
        return {"type": "histogram", "buckets": buckets, "sum": total, "count": buckets[-1][1]}


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
        self.tpot = Histogram(LATENCY_BUCKETS)
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

    def on_step_tokens(self, count: int, inter_token_latencies: list[float]) -> None:
        """A step's `count` new tokens and the inter-token latency of each request that had a token before."""
        self.generation_tokens += count
        self.inter_token_latency.observe_many(inter_token_latencies)

    def on_finished(self, metrics: RequestMetrics, finish_reason: str) -> None:
        self.request_success[finish_reason] = self.request_success.get(finish_reason, 0) + 1
        self.prompt_tokens += metrics.num_prompt_tokens
        self.request_prompt_tokens.observe(metrics.num_prompt_tokens)
        self.request_generation_tokens.observe(metrics.num_generation_tokens)
        if metrics.e2e_latency is not None:
            self.e2e_latency.observe(metrics.e2e_latency)
        if metrics.queue_time is not None:
            self.queue_time.observe(metrics.queue_time)
        if metrics.time_per_output_token is not None:
            self.tpot.observe(metrics.time_per_output_token)

    def snapshot(self, *, num_running: int, num_waiting: int, num_blocks: int,
                 num_used_blocks: int) -> dict[str, Any]:
        """Everything under vLLM's metric names with the `formwork:` prefix (`formwork.server.metrics`
        says each one's type): gauges and counters as numbers, counters by finish reason as a dict,
        histograms as `Histogram.snapshot()`s."""
        usage = num_used_blocks / num_blocks if num_blocks else 0.0
        return {
            "formwork:num_requests_running": num_running,
            "formwork:num_requests_waiting": num_waiting,
            "formwork:kv_cache_usage_perc": usage,
            "formwork:kv_cache_blocks_used": num_used_blocks,
            "formwork:kv_cache_blocks_total": num_blocks,
            "formwork:prefix_cache_queries_total": self.prefix_cache_queries,
            "formwork:prefix_cache_hits_total": self.prefix_cache_hits,
            "formwork:num_preemptions_total": self.num_preemptions,
            "formwork:prompt_tokens_total": self.prompt_tokens,
            "formwork:generation_tokens_total": self.generation_tokens,
            "formwork:request_success_total": dict(self.request_success),
            "formwork:time_to_first_token_seconds": self.ttft.snapshot(),
            "formwork:time_per_output_token_seconds": self.tpot.snapshot(),
            "formwork:inter_token_latency_seconds": self.inter_token_latency.snapshot(),
            "formwork:e2e_request_latency_seconds": self.e2e_latency.snapshot(),
            "formwork:request_queue_time_seconds": self.queue_time.snapshot(),
            "formwork:request_prompt_tokens": self.request_prompt_tokens.snapshot(),
            "formwork:request_generation_tokens": self.request_generation_tokens.snapshot(),
        }
