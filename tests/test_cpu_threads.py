"""`cpu_threads`: torch's intra-op threads for a CPU forward, leaving a core to the server's own threads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from tiny_models import tiny_model_dir  # noqa: E402

from formwork.cli import build_parser, main  # noqa: E402
from formwork.core import config as config_module  # noqa: E402
from formwork.core.config import ConfigError, EngineConfig  # noqa: E402
from formwork.core.engine import LLMEngine  # noqa: E402
from formwork.server.serve_cmd import engine_options  # noqa: E402


@pytest.fixture
def machine(monkeypatch):
    """Pretend a machine with `cores` cores whose torch uses `threads` threads."""
    def setup(cores: int | None, threads: int) -> None:
        monkeypatch.setattr(config_module.os, "cpu_count", lambda: cores)
        monkeypatch.setattr(config_module.torch, "get_num_threads", lambda: threads)
    return setup


@pytest.mark.parametrize("cores, threads, expected", [
    (8, 8, 7),     # torch takes every core: one is left to the server and the grammar threads
    (2, 2, 1),
    (1, 1, 1),     # never below one thread
    (8, 4, 4),     # the user (or a replica) chose fewer: kept
    (8, 16, 7),    # more threads than cores is oversubscribed too
    (None, 2, 1),  # unknown core count: treated as one core
])
def test_auto_leaves_one_core(machine, cores, threads, expected):
    machine(cores, threads)
    assert EngineConfig(device="cpu").resolve_cpu_threads() == expected


def test_explicit_threads_win(machine):
    machine(8, 8)
    assert EngineConfig(device="cpu", cpu_threads=8).resolve_cpu_threads() == 8
    assert EngineConfig(device="cpu", cpu_threads=3).resolve_cpu_threads() == 3


def test_cuda_leaves_torch_alone(machine, monkeypatch):
    machine(8, 8)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert EngineConfig(device="auto", cpu_threads=3).resolve_cpu_threads() is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_values_are_config_errors(bad):
    with pytest.raises(ConfigError, match="cpu_threads"):
        EngineConfig(device="cpu", cpu_threads=bad)


def test_engine_sets_torch_threads():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        LLMEngine(tiny_model_dir("llama"), device="cpu", cpu_threads=1, block_size=8, num_gpu_blocks=8)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_serve_flag_reaches_the_engine_config():
    args = build_parser().parse_args(["serve", "--cpu-threads", "3"])
    assert engine_options(args)["cpu_threads"] == 3
    assert engine_options(build_parser().parse_args(["serve"]))["cpu_threads"] is None
    assert main(["serve", "--cpu-threads", "0"]) == 2
