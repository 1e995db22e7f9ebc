"""The engine gives the same tokens with the Triton kernels (interpreted, in a subprocess) as with the
torch reference kernels, on tiny GQA Llama and sliding-window Mistral models: greedy and seeded sampling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).parent
sys.path.insert(0, str(TESTS_DIR))
from kernels_engine_run import MAX_TOKENS, PROMPTS, generate  # noqa: E402
from tiny_models import tiny_model_dir  # noqa: E402


@pytest.mark.parametrize("preset", ["llama", "mistral_swa"])
def test_engine_tokens_equal_with_triton_and_torch_kernels(preset, monkeypatch):
    model_dir = str(tiny_model_dir(preset))
    monkeypatch.setenv("FORMWORK_KERNEL_BACKEND", "torch")
    torch_tokens = generate(model_dir)
    env = {**os.environ, "FORMWORK_KERNEL_BACKEND": "triton", "TRITON_INTERPRET": "1"}
    result = subprocess.run([sys.executable, str(TESTS_DIR / "kernels_engine_run.py"), model_dir],
                            cwd=TESTS_DIR.parent, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["backend"] == "triton"
    triton_tokens = report["tokens"]
    assert len(torch_tokens) == len(PROMPTS) + 1
    assert all(len(tokens) == MAX_TOKENS for tokens in torch_tokens)
    assert triton_tokens == torch_tokens
