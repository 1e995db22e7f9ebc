"""Triton kernels under the interpreter, each run in a fresh subprocess.

TRITON_INTERPRET must be set before triton is first imported, which cannot be guaranteed inside a shared
pytest session, so these tests spawn `python -m pytest` on:
  * kernels_triton_cases.py: every Triton kernel against its torch twin (exact or per-dtype tolerance);
  * kernels_triton_elementwise_cases.py: the same for RMSNorm, SiLU-and-mul and rotary;
  * test_kernels_sampling.py: the sampling properties (greedy, masks, seeds, chi-square) with
    FORMWORK_KERNEL_BACKEND=triton, i.e. through the dispatcher on the Triton path.
A failure shows the subprocess's pytest report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).parent
REPO_ROOT = TESTS_DIR.parent


def _run_interpreted(test_file: str, extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRITON_INTERPRET": "1", **extra_env}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error::RuntimeWarning",
               str(TESTS_DIR / test_file)]
    return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("test_file,extra_env", [
    ("kernels_triton_cases.py", {}),
    ("kernels_triton_elementwise_cases.py", {}),
    ("test_kernels_sampling.py", {"FORMWORK_KERNEL_BACKEND": "triton"}),
], ids=["triton-vs-torch", "elementwise-triton-vs-torch", "sampling-properties-on-triton"])
def test_triton_kernels_under_interpreter(test_file, extra_env):
    result = _run_interpreted(test_file, extra_env)
    report = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, f"interpreted Triton tests failed:\n{report}"
    assert " passed" in result.stdout and "skipped" not in result.stdout, report
