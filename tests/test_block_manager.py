"""BlockManager: allocation, reference counts, prefix cache hits, LRU eviction, collision safety."""

import itertools

import pytest

from formwork.core import block_manager as bm_module
from formwork.core.block_manager import BlockManager, BlockManagerError, hash_block
from formwork.core.sampling_params import SamplingParams
from formwork.core.sequence import Request

_ids = itertools.count()


def make_seq(tokens, n=1):
    req = Request(f"r{next(_ids)}", None, tokens, SamplingParams(n=n), arrival_time=0.0)
    return req.seqs[0] if n == 1 else req.seqs


def compute(bm, seq, computed=()):
    """Allocate and 'run' the whole sequence, then register its full blocks."""
    assert bm.allocate_slots(seq, seq.num_tokens - len(computed) * bm.block_size, computed)
    seq.num_computed_tokens = seq.num_tokens
    bm.cache_full_blocks(seq)


def test_allocation_and_free_return_pool_to_empty():
    bm = BlockManager(num_blocks=8, block_size=4)
    seq = make_seq(list(range(10)))
    assert bm.allocate_slots(seq, 10)
    assert len(seq.block_table) == 3 and bm.num_used_blocks == 3
    seq.num_computed_tokens = 10
    seq.token_ids.append(99)
    assert bm.allocate_slots(seq, 1)  # 11 tokens still fit in 3 blocks
    assert len(seq.block_table) == 3
    seq.num_computed_tokens = 11
    seq.token_ids.append(98)
    assert bm.allocate_slots(seq, 1)
    seq.num_computed_tokens = 12
    seq.token_ids.append(97)
    assert bm.allocate_slots(seq, 1)  # token 13 needs a 4th block
    assert len(seq.block_table) == 4
    bm.free(seq)
    assert bm.num_used_blocks == 0 and seq.block_table == []


def test_allocation_is_all_or_nothing():
    bm = BlockManager(num_blocks=2, block_size=4)
    seq = make_seq(list(range(12)))
    assert not bm.allocate_slots(seq, 12)
    assert seq.block_table == [] and bm.num_free_blocks == 2


def test_prefix_hit_shares_blocks_and_leaves_last_token_to_compute():
    bm = BlockManager(num_blocks=16, block_size=4)
    a = make_seq(list(range(12)))
    compute(bm, a)
    b = make_seq(list(range(12)))  # identical prompt: only 2 of 3 blocks may be reused
    hits = bm.get_computed_blocks(b)
    assert hits == a.block_table[:2]
    compute(bm, b, hits)
    assert b.block_table[:2] == a.block_table[:2] and b.block_table[2] != a.block_table[2]
    assert bm.blocks[a.block_table[0]].ref_count == 2
    c = make_seq(list(range(8)) + [50, 51, 52, 53, 54])  # diverges in block 2
    assert bm.get_computed_blocks(c) == a.block_table[:2]
    d = make_seq([0, 1, 2, 99] + list(range(4, 12)))  # diverges in block 0: chained hashes all differ
    assert bm.get_computed_blocks(d) == []


def test_freed_cached_blocks_are_revived_then_evicted_lru():
    bm = BlockManager(num_blocks=4, block_size=4)
    a = make_seq(list(range(9)))
    compute(bm, a)
    a_blocks = list(a.block_table)
    bm.free(a)
    assert bm.num_used_blocks == 0 and bm.num_cached_blocks == 2
    b = make_seq(list(range(9)))
    hits = bm.get_computed_blocks(b)
    assert hits == a_blocks[:2]
    compute(bm, b, hits)  # revives the 2 cached blocks from the free queue
    assert bm.num_used_blocks == 3
    bm.free(b)
    # An unrelated sequence needing the whole pool evicts every cached block.
    c = make_seq(list(range(100, 116)))
    compute(bm, c)
    assert bm.num_cached_blocks == 4  # c's own four full blocks, the old prefix is gone
    assert bm.get_computed_blocks(make_seq(list(range(9)))) == []
    bm.free(c)
    assert bm.num_used_blocks == 0


def test_uncached_blocks_are_reused_before_cached_ones():
    bm = BlockManager(num_blocks=4, block_size=4)
    a = make_seq(list(range(6)))  # one full (cached) block, one partial (uncached) block
    compute(bm, a)
    full, partial = a.block_table
    bm.free(a)
    x = make_seq([7])
    assert bm.allocate_slots(x, 1)
    assert x.block_table == [partial]  # the uncached block is handed out first
    assert bm.get_computed_blocks(make_seq(list(range(6)))) == [full]


def test_hash_collision_is_detected_by_token_check(monkeypatch):
    monkeypatch.setattr(bm_module, "hash_block", lambda parent, tokens: b"same")
    bm = BlockManager(num_blocks=8, block_size=4)
    a = make_seq([1, 2, 3, 4, 5])
    compute(bm, a)
    b = make_seq([9, 9, 9, 9, 5])
    assert bm.get_computed_blocks(b) == []


def test_chained_hash_depends_on_parent():
    assert hash_block(None, [1, 2]) != hash_block(hash_block(None, [0]), [1, 2])
    assert hash_block(None, [1, 2]) == hash_block(None, (1, 2))


def test_prefix_caching_disabled_never_hits():
    bm = BlockManager(num_blocks=8, block_size=4, enable_prefix_caching=False)
    a = make_seq(list(range(9)))
    compute(bm, a)
    assert bm.get_computed_blocks(make_seq(list(range(9)))) == []
    assert bm.num_cached_blocks == 0


def test_double_free_is_an_error():
    bm = BlockManager(num_blocks=4, block_size=4)
    seq = make_seq([1, 2])
    assert bm.allocate_slots(seq, 2)
    table = list(seq.block_table)
    bm.free(seq)
    seq.block_table = table
    with pytest.raises(BlockManagerError):
        bm.free(seq)
