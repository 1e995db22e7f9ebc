"""The replica router (prefix affinity, then least loaded) and the merge of replica metrics; no Ray."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.core.metrics import Histogram
from formwork.server.replicas.metrics import merge_snapshots
from formwork.server.replicas.routing import NoReplicaError, PrefixRouter, block_hashes

BLOCK = 4
tokens = st.lists(st.integers(0, 50), max_size=40)


@settings(max_examples=25, deadline=None)
@given(tokens, tokens)
def test_block_hashes_agree_exactly_on_shared_full_blocks(a, b):
    ha, hb = block_hashes(a, BLOCK), block_hashes(b, BLOCK)
    assert len(ha) == len(a) // BLOCK
    for i, (x, y) in enumerate(zip(ha, hb)):
        assert (x == y) == (a[:(i + 1) * BLOCK] == b[:(i + 1) * BLOCK])


@settings(max_examples=25, deadline=None)
@given(st.lists(tokens, min_size=1, max_size=12), st.integers(1, 4))
def test_a_prompt_whose_blocks_were_routed_goes_back_to_that_replica(prompts, replicas):
    router = PrefixRouter(replicas, BLOCK)
    for prompt in prompts:
        first = router.route(prompt)
        router.finished(first.replica)
        again = router.route(prompt)
        router.finished(again.replica)
        if len(prompt) >= BLOCK:
            assert again.replica == first.replica and again.matched_blocks == len(prompt) // BLOCK
        assert all(r.in_flight == 0 for r in router.replicas)


def test_a_longer_prompt_follows_its_cached_prefix():
    router = PrefixRouter(2, BLOCK)
    prefix = list(range(12))
    owner = router.route(prefix).replica
    router.finished(owner)
    router.finished(router.route([50] * 8).replica)  # the other replica's turn goes elsewhere
    longer = router.route(prefix + [60, 61, 62, 63, 64])
    assert (longer.replica, longer.matched_blocks) == (owner, 3)


def test_idle_replicas_take_turns_for_unrelated_prompts():
    router = PrefixRouter(3, BLOCK)
    chosen = []
    for i in range(6):
        route = router.route([100 + i] * BLOCK)
        router.finished(route.replica)
        chosen.append(route.replica)
    assert chosen == [0, 1, 2, 0, 1, 2]


def test_affinity_yields_to_the_least_loaded_past_the_imbalance_limit():
    router = PrefixRouter(2, BLOCK, max_imbalance=2)
    shared = [1, 2, 3, 4, 5]
    assert [router.route(shared).replica for _ in range(4)] == [0, 0, 0, 1]
    assert [r.in_flight for r in router.replicas] == [3, 1]
    assert router.route([9] * 3).replica == 1  # no full block: least loaded


def test_down_replicas_get_nothing_and_come_back_with_an_empty_cache():
    router = PrefixRouter(2, BLOCK)
    prompt = list(range(8))
    assert router.route(prompt).replica == 0
    router.mark(0, False)
    assert {router.route(list(range(i, i + 8))).replica for i in range(5)} == {1}
    router.mark(1, False)
    with pytest.raises(NoReplicaError):
        router.route(prompt)
    router.mark(0, True)
    route = router.route(prompt)
    assert route.replica == 0 and route.matched_blocks == 0  # a replaced replica has no cache


def test_invalid_router_settings_are_refused():
    with pytest.raises(ValueError, match="invalid router settings"):
        PrefixRouter(0, BLOCK)


def _snapshot(used: int, total: int, hits: int, aborts: int, latencies: list[float]) -> dict:
    histogram = Histogram((0.1, 1.0))
    for value in latencies:
        histogram.observe(value)
    return {"formwork:kv_cache_blocks_used": used, "formwork:kv_cache_blocks_total": total,
            "formwork:kv_cache_usage_perc": used / total, "formwork:prefix_cache_hits_total": hits,
            "formwork:request_success_total": {"stop": 1, "abort": aborts},
            "formwork:e2e_request_latency_seconds": histogram.snapshot()}


def test_replica_snapshots_merge_into_one_pool():
    merged = merge_snapshots([_snapshot(10, 100, 5, 1, [0.05, 2.0]), _snapshot(30, 50, 7, 0, [0.5])])
    assert merged["formwork:kv_cache_blocks_used"] == 40 and merged["formwork:kv_cache_blocks_total"] == 150
    assert merged["formwork:kv_cache_usage_perc"] == pytest.approx(40 / 150)
    assert merged["formwork:prefix_cache_hits_total"] == 12
    assert merged["formwork:request_success_total"] == {"stop": 2, "abort": 1}
    latency = merged["formwork:e2e_request_latency_seconds"]
    assert latency["buckets"] == [(0.1, 1), (1.0, 2), (float("inf"), 3)]
    assert latency["count"] == 3 and latency["sum"] == pytest.approx(2.55)
