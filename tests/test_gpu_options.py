"""Device, dtype, GPU-memory and CUDA-graph options: config resolution, KV sizing arithmetic (CUDA queries
monkeypatched, so it runs without a GPU) and the `formwork serve` flags."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.cli import build_parser, main  # noqa: E402
from formwork.core import memory, model_runner  # noqa: E402
from formwork.core.config import ConfigError, EngineConfig, resolve_device  # noqa: E402
from formwork.core.memory import MemoryProfile, kv_cache_budget, profile_cuda_memory  # noqa: E402
from formwork.core.model_files import ModelFiles  # noqa: E402
from formwork.core.model_runner import ModelRunner  # noqa: E402

GiB = 1 << 30


@pytest.fixture
def fake_cuda(monkeypatch):
    """Pretend one CUDA device exists (for config resolution only: nothing is allocated on it)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_auto_device_follows_cuda_availability(monkeypatch, fake_cuda):
    assert resolve_device("auto") == "cuda" and EngineConfig().device == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu" and EngineConfig().device == "cpu"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_a_gpu_is_a_clear_error(device):
    with pytest.raises(ConfigError, match="CUDA is not available"):
        EngineConfig(device=device)


def test_bad_device_names(fake_cuda):
    with pytest.raises(ConfigError, match="does not exist: this machine has 1 CUDA device"):
        resolve_device("cuda:3")
    for bad in ("tpu", "gpu0", 7):
        with pytest.raises(ConfigError, match="device"):
            resolve_device(bad)
    assert resolve_device(torch.device("cpu")) == "cpu" and resolve_device("cuda:0") == "cuda:0"


def test_switch_defaults_and_refusals_on_cpu():
    config = EngineConfig(device="cpu")
    assert not config.use_cuda_graphs and not config.use_warmup and not config.sizes_kv_from_gpu_memory
    assert EngineConfig(device="cpu", warmup=True).use_warmup
    with pytest.raises(ConfigError, match="cuda_graphs needs a CUDA device"):
        EngineConfig(device="cpu", cuda_graphs=True)
    with pytest.raises(ConfigError, match="gpu_memory_utilization applies to CUDA devices"):
        EngineConfig(device="cpu", gpu_memory_utilization=0.5)
    with pytest.raises(ConfigError, match="cuda_graphs must be a bool"):
        EngineConfig(device="cpu", cuda_graphs="yes")


def test_switch_defaults_on_cuda(fake_cuda):
    config = EngineConfig(device="cuda")
    assert config.use_cuda_graphs and config.use_warmup and config.sizes_kv_from_gpu_memory
    assert not EngineConfig(device="cuda", cuda_graphs=False, warmup=False).use_cuda_graphs
    assert not EngineConfig(device="cuda", kv_cache_memory=GiB).sizes_kv_from_gpu_memory
    for bad in (0, 1.5, -0.1, True, "0.9"):
        with pytest.raises(ConfigError, match="fraction in"):
            EngineConfig(device="cuda", gpu_memory_utilization=bad)
    with pytest.raises(ConfigError, match="not several"):
        EngineConfig(device="cuda", gpu_memory_utilization=0.8, kv_cache_memory=GiB)


def test_jump_forward_defaults_to_off_where_decode_replays_cuda_graphs(fake_cuda):
    assert not EngineConfig(device="cuda").use_jump_forward  # a jump would take the step off its graph
    assert not EngineConfig(device="cuda", cuda_graphs=False).use_jump_forward  # async scheduling: one token a step
    assert EngineConfig(device="cuda", cuda_graphs=False, async_scheduling=False).use_jump_forward
    assert EngineConfig(device="cuda", enable_jump_forward=True).use_jump_forward
    assert EngineConfig(device="cpu").use_jump_forward
    assert not EngineConfig(device="cpu", enable_jump_forward=False).use_jump_forward
    with pytest.raises(ConfigError, match="enable_jump_forward must be a bool or None"):
        EngineConfig(device="cpu", enable_jump_forward="on")


def test_async_scheduling_defaults_to_on_for_one_cuda_rank(fake_cuda):
    assert EngineConfig(device="cuda").use_async_scheduling
    assert not EngineConfig(device="cuda", async_scheduling=False).use_async_scheduling
    assert not EngineConfig(device="cuda", enable_jump_forward=True).use_async_scheduling  # jumps asked for
    assert not EngineConfig(device="cpu").use_async_scheduling


def test_kv_budget_arithmetic():
    profile = MemoryProfile(total=80 * GiB, used=5 * GiB, activation_peak=2 * GiB)
    assert kv_cache_budget(profile, 0.9) == int(72 * GiB) - 7 * GiB
    assert kv_cache_budget(profile, 0.05) < 0
    config = EngineConfig(device="cpu", max_num_seqs=1000)
    assert config.resolve_num_blocks(1 << 20, 4096, gpu_budget=65 * GiB) == 65 * 1024
    with pytest.raises(ConfigError, match="GPU memory left for the KV cache"):
        config.resolve_num_blocks(1 << 20, 4096, gpu_budget=-GiB)
    # an explicit size wins over the GPU budget; the pool is capped at what max_num_seqs can use
    assert EngineConfig(device="cpu", kv_cache_memory=8 << 20).resolve_num_blocks(1 << 20, 4096, 65 * GiB) == 8
    assert EngineConfig(device="cpu", max_num_seqs=2).resolve_num_blocks(1 << 20, 4096, 65 * GiB) == 2 * 256


def test_profile_reads_the_device_counters(monkeypatch):
    state = {"allocated": 3 * GiB, "peak": 0}
    calls = []

    def forward():
        calls.append("forward")
        state["peak"] = 4 * GiB + (512 << 20)  # activations on top of the weights

    for name in ("synchronize", "empty_cache", "reset_peak_memory_stats"):
        monkeypatch.setattr(torch.cuda, name, lambda *a, _n=name: calls.append(_n))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: state["allocated"])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: state["peak"])
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (76 * GiB, 80 * GiB))
    profile = profile_cuda_memory(torch.device("cuda"), forward)
    assert profile == MemoryProfile(total=80 * GiB, used=4 * GiB, activation_peak=GiB + (512 << 20))
    assert calls.index("reset_peak_memory_stats") < calls.index("forward") < calls.index("empty_cache", 2)


def test_engine_runner_sizes_the_pool_from_the_profiled_budget(monkeypatch):
    """The CUDA sizing path with the device queries faked: the profile step really runs (on the CPU),
    and the pool gets the bytes the budget leaves."""
    files = ModelFiles.load(tiny_model_dir("llama"))
    profiled = []

    def fake_profile(device, run_forward):
        run_forward()  # the worst-case step: a scratch pool, a forward and a sample
        profiled.append(device)
        return MemoryProfile(total=10 << 20, used=2 << 20, activation_peak=1 << 20)

    monkeypatch.setattr(model_runner, "profile_cuda_memory", fake_profile)
    monkeypatch.setattr(EngineConfig, "sizes_kv_from_gpu_memory", property(lambda self: True))
    config = EngineConfig(device="cpu", dtype="float32", block_size=4, max_num_seqs=256, max_num_batched_tokens=64)
    runner = ModelRunner.for_engine(files, config, max_model_len=128)
    per_block = ModelRunner.kv_bytes_per_block(files.hf_config, 4, torch.float32)
    expected = (int((10 << 20) * memory.DEFAULT_GPU_MEMORY_UTILIZATION) - (3 << 20)) // per_block
    assert profiled == [torch.device("cpu")] and runner.num_blocks == expected
    assert runner.kv_cache.shape[2] == expected


def test_serve_flags_parse():
    args = build_parser().parse_args(["serve", "--device", "cuda:1", "--dtype", "bfloat16",
                                      "--gpu-memory-utilization", "0.8", "--no-cuda-graphs", "--no-warmup"])
    assert (args.device, args.dtype, args.gpu_memory_utilization, args.cuda_graphs, args.warmup) == \
        ("cuda:1", "bfloat16", 0.8, False, False)
    defaults = build_parser().parse_args(["serve"])
    assert (defaults.device, defaults.dtype, defaults.gpu_memory_utilization, defaults.cuda_graphs,
            defaults.warmup) == ("auto", "auto", None, None, True)


@pytest.mark.parametrize("flags", [["--gpu-memory-utilization", "1.5"], ["--gpu-memory-utilization", "x"],
                                   ["--dtype", "int8"]])
def test_serve_rejects_bad_values(flags):
    assert main(["serve", *flags]) == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusals on a machine without CUDA")
@pytest.mark.parametrize("flags, message", [
    (["--device", "cuda"], "CUDA is not available"),
    (["--gpu-memory-utilization", "0.5"], "gpu_memory_utilization applies to CUDA devices"),
    (["--cuda-graphs"], "cuda_graphs needs a CUDA device"),
])
def test_serve_refuses_gpu_options_without_a_gpu(flags, message, caplog):
    assert main(["serve", *flags]) == 2
    assert "invalid engine option" in caplog.text and message in caplog.text
