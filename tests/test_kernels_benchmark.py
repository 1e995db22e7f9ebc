"""benchmarks/kernels.py runs: without a GPU it says so, times every torch twin and exits 0."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

BENCHMARK = Path(__file__).parent.parent / "benchmarks" / "kernels.py"


def test_kernel_benchmark_reports_no_gpu_and_times_torch_twins(capsys, tmp_path):
    spec = importlib.util.spec_from_file_location("formwork_kernel_benchmark", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    try:
        assert module.main(["--repeats", "1", "--markdown", str(tmp_path / "table.md")]) == 0
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    assert ("GPU: " if torch.cuda.is_available() else "No CUDA GPU found") in printed
    rows = [line for line in (tmp_path / "table.md").read_text().splitlines() if line.startswith("| ")]
    kernels = {row.split("|")[1].strip().split()[0] for row in rows[1:]}
    assert kernels == {"write_kv_cache", "paged_attention", "apply_token_bitmask", "sample"}
    for row in rows[1:]:
        assert float(row.split("|")[3]) > 0  # torch milliseconds
