"""Tensor-parallel sharding without processes: which heads, columns and vocabulary rows each rank holds,
that the loader reads exactly those slices of the checkpoint (and no more), and the option checks."""

import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_model import model_files  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402

import formwork.sdk  # noqa: E402
from formwork.cli import build_parser, main  # noqa: E402
from formwork.core import LLM  # noqa: E402
from formwork.core.config import ConfigError, EngineConfig  # noqa: E402
from formwork.core.distributed.group import TensorParallelGroup  # noqa: E402
from formwork.core.loader import load_model  # noqa: E402
from formwork.core.model_files import ModelFiles  # noqa: E402
from formwork.core.models.sharding import check_divisible, kv_head_shard, vocab_shard  # noqa: E402
from formwork.server.serve_cmd import engine_options  # noqa: E402


def _rows(t: torch.Tensor, heads, head_dim: int) -> torch.Tensor:
    return torch.cat([t[h * head_dim:(h + 1) * head_dim] for h in heads])


def _expected_shard(name: str, full: torch.Tensor, rank: int, size: int, args) -> torch.Tensor:
    """Rank `rank`'s part of the whole model's parameter `name`, derived from what the rank computes:
    its query heads and the KV heads those read (GQA: head h reads KV head h // group), its part of the
    intermediate dimension, its block of vocabulary rows."""
    d, heads, kv = args.head_dim, args.num_heads, args.num_kv_heads
    q_heads = range(rank * heads // size, (rank + 1) * heads // size)
    kv_heads = sorted({h // (heads // kv) for h in q_heads})
    if "qkv_proj" in name:
        q, k, v = full.split([heads * d, kv * d, kv * d])
        return torch.cat([_rows(q, q_heads, d), _rows(k, kv_heads, d), _rows(v, kv_heads, d)])
    if "gate_up_proj" in name:
        gate, up = full.chunk(2)
        return torch.cat([gate.chunk(size)[rank], up.chunk(size)[rank]])
    if name.endswith(("o_proj.weight", "down_proj.weight")):
        return full.chunk(size, dim=1)[rank]
    if name.endswith(("embed_tokens.weight", "lm_head.weight")):
        per_rank = -(-args.vocab_size // size)
        rows = full[rank * per_rank:(rank + 1) * per_rank]
        return torch.cat([rows, rows.new_zeros(per_rank - len(rows), rows.shape[1])])
    return full


def _three_head_files() -> ModelFiles:
    """A Llama with 3 heads, 3 KV heads and 96 intermediate columns: it splits 3 ways, and its 400-token
    vocabulary does not (134 + 134 + 132 rows, padded to 134)."""
    return ModelFiles.load(tiny_model_dir("llama", hidden_size=48, num_attention_heads=3, num_key_value_heads=3,
                                          intermediate_size=96))


@pytest.mark.parametrize("variant, size", [("llama", 2), ("llama_mqa", 2), ("qwen2", 2), ("llama_bias", 2),
                                           ("three_heads", 3)])
def test_each_rank_reads_exactly_its_slices(variant, size):
    files = _three_head_files() if variant == "three_heads" else model_files(variant)
    whole, whole_bytes = load_model(files, "float32")
    full = dict(whole.named_parameters())
    assert whole_bytes == sum(p.numel() * 4 for p in full.values())  # float32 checkpoint, read once
    for rank in range(size):
        shard, bytes_read = load_model(files, "float32", tp=TensorParallelGroup(rank, size))
        params = dict(shard.named_parameters())
        assert params.keys() == full.keys()
        for name, param in params.items():
            assert torch.equal(param, _expected_shard(name, full[name], rank, size, whole.args)), name
        tables = [m for m in (shard.model.embed_tokens, shard.lm_head) if m is not None]
        padding = sum(m.weight.shape[0] - m.rows.length for m in tables) * whole.args.hidden_size
        assert bytes_read == (sum(p.numel() for p in params.values()) - padding) * 4
        assert bytes_read < 1.1 * whole_bytes / size  # only norms (and a lone KV head) are read by every rank
        assert shard.num_kv_heads == max(whole.args.num_kv_heads // size, 1)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(0, 3), st.integers(1, 4), st.integers(1, 3))
def test_kv_heads_cover_every_query_head(kv_log2, size_log2, group, per_rank_q):
    kv, size = 2 ** kv_log2, 2 ** size_log2
    heads = max(kv * group, size * per_rank_q)
    heads -= heads % (kv * size)  # a multiple of both
    heads = heads or kv * size
    covered = set()
    for rank in range(size):
        start, count = kv_head_shard(kv, TensorParallelGroup(rank, size))
        assert count == max(kv // size, 1)
        per_rank = heads // size
        for h in range(rank * per_rank, (rank + 1) * per_rank):
            assert start <= h // (heads // kv) < start + count
        covered.update(range(start, start + count))
    assert covered == set(range(kv))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5000), st.integers(1, 8))
def test_vocab_shards_partition_the_vocabulary(vocab, size):
    seen, padded_sizes = [], set()
    for rank in range(size):
        shard, padded = vocab_shard(vocab, TensorParallelGroup(rank, size))
        assert 0 <= shard.length <= padded and shard.full == vocab
        seen.extend(range(shard.start, shard.start + shard.length))
        padded_sizes.add(padded)
    assert seen == list(range(vocab)) and len(padded_sizes) == 1


def test_models_that_do_not_split_are_refused():
    with pytest.raises(ConfigError, match="4 attention heads"):
        check_divisible(4, 2, 128, 3)
    with pytest.raises(ConfigError, match="3 KV heads"):
        check_divisible(6, 3, 128, 2)
    with pytest.raises(ConfigError, match="intermediate_size 130"):
        check_divisible(8, 8, 130, 4)
    check_divisible(8, 1, 128, 4)  # one KV head, replicated on every rank
    for llm_class in (LLM, formwork.sdk.LLM):  # the option reaches the engine through either API
        with pytest.raises(ConfigError, match="tensor_parallel_size=3 does not divide"):
            llm_class(model_files("llama").path, device="cpu", tensor_parallel_size=3)


def test_tensor_parallel_options(monkeypatch):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="tensor_parallel_size must be a positive int"):
            EngineConfig(device="cpu", tensor_parallel_size=bad)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ConfigError, match="needs 2 CUDA devices; this machine has 1"):
        EngineConfig(device="cuda", tensor_parallel_size=2)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ConfigError, match="give device 'cuda' or 'auto'"):
        EngineConfig(device="cuda:1", tensor_parallel_size=2)
    with pytest.raises(ConfigError, match="cuda_graphs with tensor_parallel_size > 1"):
        EngineConfig(device="cuda", tensor_parallel_size=2, cuda_graphs=True)
    config = EngineConfig(device="auto", tensor_parallel_size=2)
    assert not config.use_cuda_graphs and [config.rank_device(r) for r in range(2)] == ["cuda:0", "cuda:1"]
    assert EngineConfig(device="cuda").use_cuda_graphs


def test_serve_flag_reaches_the_engine(caplog):
    assert engine_options(build_parser().parse_args(["serve", "--tensor-parallel-size", "2"]))[
        "tensor_parallel_size"] == 2
    assert build_parser().parse_args(["serve"]).tensor_parallel_size == 1
    assert main(["serve", "--tensor-parallel-size", "0"]) == 2
    model = str(model_files("llama").path)
    assert main(["serve", "--model", model, "--device", "cpu", "--tensor-parallel-size", "3"]) == 2
    assert "invalid engine option" in caplog.text and "tensor_parallel_size=3 does not divide" in caplog.text
