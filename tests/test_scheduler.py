"""Scheduler with fake model outputs: budgets, admission, preemption, priorities, cancellation, leaks."""

import itertools
import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from formwork.core.block_manager import BlockManager
from formwork.core.metrics import EngineMetrics
from formwork.core.sampling_params import SamplingParams
from formwork.core.scheduler import Scheduler
from formwork.core.sequence import Request, SequenceStatus

_ids = itertools.count()


def make_request(prompt_len, max_tokens=4, priority=0, arrival=None, n=1, token_base=0):
    arrival = float(next(_ids)) if arrival is None else arrival
    tokens = [token_base + i for i in range(prompt_len)]
    return Request(f"r{next(_ids)}", None, tokens, SamplingParams(max_tokens=max_tokens, n=n),
                   arrival_time=arrival, priority=priority)


def make_scheduler(num_blocks=64, block_size=4, max_num_seqs=8, budget=32, chunked=True, caching=True):
    bm = BlockManager(num_blocks, block_size, enable_prefix_caching=caching)
    return Scheduler(bm, max_num_seqs=max_num_seqs, max_num_batched_tokens=budget,
                     enable_chunked_prefill=chunked, metrics=EngineMetrics())


def fake_step(sched, token=7):
    """One step with a fake model: every sequence that wants logits gets `token`; finish at max_tokens."""
    out = sched.schedule()
    sampled = {s.seq.seq_id: (token, 0.0) for s in out.scheduled if s.wants_logits}
    for seq in sched.update_from_output(out, sampled):
        if seq.num_output_tokens >= seq.params.max_tokens:
            sched.finish(seq, SequenceStatus.FINISHED_LENGTH)
    return out


def check_invariants(sched):
    bm = sched.block_manager
    live = sched.running + sched.waiting
    refs = {}
    for seq in live:
        for b in seq.block_table:
            refs[b] = refs.get(b, 0) + 1
    for block in bm.blocks:
        assert block.ref_count == refs.get(block.block_id, 0)
    assert bm.num_used_blocks == len(refs)
    for seq in sched.waiting:
        assert seq.block_table == [] and seq.num_computed_tokens == 0
    assert len(sched.running) <= sched.max_num_seqs


def test_budget_respected_and_prefill_chunked():
    sched = make_scheduler(budget=8)
    req = make_request(20)
    sched.add(req.seqs[0])
    chunks = []
    while req.seqs[0].num_output_tokens == 0:
        out = fake_step(sched)
        assert out.num_batched_tokens <= 8
        chunks.append(out.scheduled[0].num_new_tokens)
    assert chunks == [8, 8, 4]


def test_decodes_and_prefills_share_a_step():
    sched = make_scheduler(budget=10)
    a = make_request(4, max_tokens=10)
    sched.add(a.seqs[0])
    fake_step(sched)
    b = make_request(30, max_tokens=2)
    sched.add(b.seqs[0])
    out = fake_step(sched)
    assert [(s.seq.request_id, s.num_new_tokens) for s in out.scheduled] == [(a.request_id, 1), (b.request_id, 9)]


def test_without_chunked_prefill_a_prompt_waits_for_a_whole_step():
    sched = make_scheduler(budget=16, chunked=False)
    a, b = make_request(10), make_request(10)
    sched.add(a.seqs[0])
    sched.add(b.seqs[0])
    out = sched.schedule()
    assert [s.seq.request_id for s in out.scheduled] == [a.request_id]


def test_max_num_seqs_limits_running():
    sched = make_scheduler(max_num_seqs=2, budget=100)
    reqs = [make_request(3) for _ in range(4)]
    for r in reqs:
        sched.add(r.seqs[0])
    out = sched.schedule()
    assert len(out.scheduled) == 2 and sched.num_running == 2 and sched.num_waiting == 2


def test_priority_orders_admission():
    sched = make_scheduler(max_num_seqs=1)
    low = make_request(3, priority=5, arrival=0.0)
    high = make_request(3, priority=-1, arrival=1.0)
    sched.add(low.seqs[0])
    sched.add(high.seqs[0])
    out = sched.schedule()
    assert out.scheduled[0].seq is high.seqs[0]


def test_preemption_by_recompute_when_blocks_run_out():
    sched = make_scheduler(num_blocks=4, block_size=4, budget=64)
    a = make_request(7, max_tokens=8, arrival=0.0)
    b = make_request(7, max_tokens=8, arrival=1.0, token_base=100)
    sched.add(a.seqs[0])
    sched.add(b.seqs[0])
    preempted = []
    for _ in range(40):
        if not sched.has_unfinished():
            break
        out = fake_step(sched)
        preempted += out.preempted
        check_invariants(sched)
    assert not sched.has_unfinished()
    assert b.seqs[0] in preempted  # the later arrival is the victim
    assert b.seqs[0].output_token_ids == [7] * 8 and a.seqs[0].output_token_ids == [7] * 8
    assert sched.metrics.num_preemptions >= 1
    assert sched.block_manager.num_used_blocks == 0


def test_cancel_frees_blocks_at_once_waiting_or_running():
    sched = make_scheduler(max_num_seqs=1)
    a, b = make_request(9), make_request(9)
    sched.add(a.seqs[0])
    sched.add(b.seqs[0])
    fake_step(sched)
    assert sched.block_manager.num_used_blocks > 0
    sched.finish(a.seqs[0], SequenceStatus.FINISHED_ABORTED)
    sched.finish(b.seqs[0], SequenceStatus.FINISHED_ABORTED)
    assert sched.block_manager.num_used_blocks == 0 and not sched.has_unfinished()


def test_prefix_hits_counted():
    sched = make_scheduler(budget=64)
    a = make_request(9, max_tokens=1)
    sched.add(a.seqs[0])
    fake_step(sched)
    b = make_request(9, max_tokens=1)
    sched.add(b.seqs[0])
    out = fake_step(sched)
    assert out.scheduled[0].num_new_tokens == 1  # 8 of 9 tokens came from the cache
    assert sched.metrics.prefix_cache_queries == 18 and sched.metrics.prefix_cache_hits == 8


def test_waiting_for_grammar_is_skipped():
    sched = make_scheduler()
    gated, free = make_request(3, arrival=0.0), make_request(3, arrival=1.0)
    gated.seqs[0].status = SequenceStatus.WAITING_FOR_GRAMMAR
    sched.add(gated.seqs[0])
    sched.add(free.seqs[0])
    out = fake_step(sched)
    assert [s.seq for s in out.scheduled] == [free.seqs[0]]
    gated.seqs[0].status = SequenceStatus.WAITING
    assert [s.seq for s in fake_step(sched).scheduled] == [free.seqs[0], gated.seqs[0]]


@settings(deadline=None, max_examples=40)
@example(seed=29844, num_blocks=6, budget=1, chunked=True, caching=False)  # drains past step 300
@given(seed=st.integers(0, 2**32 - 1), num_blocks=st.integers(6, 24), budget=st.integers(1, 24),
       chunked=st.booleans(), caching=st.booleans())
def test_random_arrivals_and_cancels_never_leak(seed, num_blocks, budget, chunked, caching):
    rng = random.Random(seed)
    block_size = 4
    # Every request fits the pool alone, so progress is always possible.
    max_len = min(num_blocks * block_size, 24)
    sched = make_scheduler(num_blocks=num_blocks, block_size=block_size, max_num_seqs=rng.randint(1, 5),
                           budget=budget if chunked else max(budget, max_len), chunked=chunked, caching=caching)
    live = []
    # 60 steps of arrivals, then drain: at a 1-token budget that can take several hundred steps.
    for step in range(3000):
        if step < 60 and rng.random() < 0.4:
            plen = rng.randint(1, max_len - 1)
            req = make_request(plen, max_tokens=rng.randint(1, max_len - plen), n=rng.randint(1, 2),
                               priority=rng.randint(0, 2), token_base=rng.choice([0, 1000]))
            for seq in req.seqs:
                sched.add(seq)
            live.extend(req.seqs)
        if live and rng.random() < 0.1:
            victim = rng.choice(live)
            sched.finish(victim, SequenceStatus.FINISHED_ABORTED)
        out = fake_step(sched)
        assert out.num_batched_tokens <= sched.max_num_batched_tokens
        check_invariants(sched)
        live = [s for s in live if not s.status.is_finished]
        if step >= 60 and not sched.has_unfinished():
            break
    assert not sched.has_unfinished()
    assert sched.block_manager.num_used_blocks == 0


@settings(deadline=None, max_examples=30)
@given(seed=st.integers(0, 2**32 - 1), num_blocks=st.integers(6, 24), budget=st.integers(1, 24))
def test_one_pass_schedule_equals_the_allocating_loop(seed, num_blocks, budget):
    """`_schedule_running`'s one pass over decodes gives the steps (sequences, token counts, preemptions, block
    tables) that the allocating and preempting loop alone gives, under random arrivals and a small pool."""
    import copy

    rng = random.Random(seed)
    max_num_seqs = rng.randint(1, 6)
    fast, slow = (make_scheduler(num_blocks=num_blocks, block_size=4, max_num_seqs=max_num_seqs, budget=budget)
                  for _ in range(2))
    slow._schedule_running = lambda out, budget: Scheduler._schedule_running_from(slow, 0, out, budget)
    max_len = min(num_blocks * 4, 24)
    for step in range(200):
        if step < 40 and rng.random() < 0.5:
            plen = rng.randint(1, max_len - 1)
            request = make_request(plen, max_tokens=rng.randint(1, max_len - plen), priority=rng.randint(0, 2))
            twin = copy.deepcopy(request)
            fast.add(request.seqs[0])
            slow.add(twin.seqs[0])
        got, expected = fake_step(fast), fake_step(slow)
        assert [(s.seq.request_id, s.num_new_tokens, s.wants_logits) for s in got.scheduled] == \
            [(s.seq.request_id, s.num_new_tokens, s.wants_logits) for s in expected.scheduled]
        assert [seq.request_id for seq in got.preempted] == [seq.request_id for seq in expected.preempted]
        assert [seq.block_table for seq in fast.running] == [seq.block_table for seq in slow.running]
        assert fast.has_unfinished() == slow.has_unfinished()
        if step >= 40 and not fast.has_unfinished():
            break
