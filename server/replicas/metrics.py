"""`/metrics` over replicas: the engines' snapshots merged under the single-server names, plus
per-replica routing and health families labelled `replica`.

Merging sums counters, gauges and histogram buckets (every replica uses the same bounds), and
recomputes `kv_cache_usage_perc` from the summed blocks, so a dashboard built for one server reads
the whole pool. The up-front constraint check runs on the router, so its histogram is the router's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from formwork.server.metrics import METRICS, family

if TYPE_CHECKING:
    from formwork.server.replicas.pool import ReplicaPool

USAGE = "formwork:kv_cache_usage_perc"


def merge_snapshots(snapshots: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One snapshot for several engines (see the module docstring)."""
    merged: dict[str, Any] = {}
    for snapshot in snapshots:
        for name, value in snapshot.items():
            merged[name] = value if name not in merged else _add(merged[name], value)
    if merged:
        total = merged["formwork:kv_cache_blocks_total"]
        merged[USAGE] = merged["formwork:kv_cache_blocks_used"] / total if total else 0.0
    return merged


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, dict) and a.get("type") == "histogram":
        if [bound for bound, _ in a["buckets"]] != [bound for bound, _ in b["buckets"]]:
            raise ValueError("cannot merge histograms with different buckets")
        return {"type": "histogram", "buckets": [(bound, x + y) for (bound, x), (_, y) in zip(a["buckets"], b["buckets"])],
                "sum": a["sum"] + b["sum"], "count": a["count"] + b["count"]}
    if isinstance(a, dict):
        return {key: a.get(key, 0) + b.get(key, 0) for key in a.keys() | b.keys()}
    return a + b


class ReplicaCollector(Collector):
    """Renders the pool's last fetched snapshots (`ReplicaPool.refresh_metrics` runs before each scrape)."""

    def __init__(self, pool: ReplicaPool, model_name: str):
        self.pool = pool
        self.model_name = model_name

    def collect(self) -> Iterator[Metric]:
        pool, model = self.pool, self.model_name
        merged = merge_snapshots(pool.snapshots.values())
        merged["formwork:constraint_check_seconds"] = pool.validator.check_seconds.snapshot()
        for name, value in merged.items():
            kind, help_text = METRICS[name]
            yield family(name, kind, help_text, value, model)
        yield family("formwork:router_seconds", "histogram", "Histogram of the time the router spends choosing "
                     "a replica for a request, in seconds.", pool.router_seconds.snapshot(), model)
        labels = ["model_name", "replica"]
        up = GaugeMetricFamily("formwork:replica_up", "1 while the replica is in rotation.", labels=labels)
        routed = CounterMetricFamily("formwork:replica_requests_total", "Requests routed to the replica.",
                                     labels=labels)
        by_prefix = CounterMetricFamily("formwork:replica_prefix_routed_total", "Requests routed to the replica "
                                        "because it held their prompt's leading blocks.", labels=labels)
        hits = CounterMetricFamily("formwork:replica_prefix_cache_hits_total", "The replica's prefix-cache hits, "
                                   "in tokens.", labels=labels)
        for i, load in enumerate(pool.router.replicas):
            key = [model, str(i)]
            up.add_metric(key, float(load.up))
            routed.add_metric(key, load.routed)
            by_prefix.add_metric(key, load.routed_by_prefix)
            hits.add_metric(key, pool.snapshots.get(i, {}).get("formwork:prefix_cache_hits_total", 0))
        yield from (up, routed, by_prefix, hits)


def replica_metrics_registry(pool: ReplicaPool, model_name: str) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ReplicaCollector(pool, model_name))
    return registry
