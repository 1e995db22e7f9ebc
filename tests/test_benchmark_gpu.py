"""benchmarks/gpu.py: refuses to run without a GPU, and its every piece runs on a tiny model on the CPU
(`--smoke`), writing the report."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gpu.py"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_without_a_gpu_it_exits_with_a_message(capsys, tmp_path):
    assert _load().main(["--out", str(tmp_path / "gpu.md")]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "gpu.md").exists()


def test_smoke_run_writes_every_figure(tmp_path):
    out = tmp_path / "gpu.md"
    assert _load().main(["--smoke", "--out", str(out)]) == 0
    text = out.read_text()
    for figure in ("TPOT, one request", "throughput, 8 requests", "float32 greedy tokens equal to transformers",
                   "Constrained decoding", "Cold start", "decode attention", "split-KV decode", "KV write",
                   "bitmask apply", "sample T=0.8 top-k 50 top-p 0.9"):
        assert figure in text, figure
    assert "| float32 greedy tokens equal to transformers (tiny model) | 100% |" in text
    finished, valid = map(int, re.search(r"(\d+) of \d+ finished within \d+ tokens, (\d+) of them valid", text).groups())
    assert valid == finished > 0
    health = float(re.search(r"/health 200 after ([\d.]+) s", text).group(1))
    assert health > 0
