"""The split-row sampler: its launch blocking here, and `kernels_sampling_split_cases.py` (the kernels
against the torch reference) in a subprocess under TRITON_INTERPRET=1 (see `test_kernels_triton.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import test_kernels_triton as interpreted  # noqa: E402

from formwork.kernels import SamplingTensors, sample  # noqa: E402
from formwork.kernels.launch import SAMPLE_CHUNK, SAMPLE_TOP_K_MAX, split_sample_launch  # noqa: E402
from formwork.kernels.variants import variant_log  # noqa: E402


def test_launch_covers_the_vocabulary_in_chunks():
    launch = split_sample_launch(129_280)
    assert (launch.chunk, launch.top_k_max) == (SAMPLE_CHUNK, SAMPLE_TOP_K_MAX)
    assert launch.num_chunks == 32 and launch.chunks_pad == 32
    assert (launch.num_chunks - 1) * launch.chunk < 129_280 <= launch.num_chunks * launch.chunk
    small = split_sample_launch(641, chunk=64, top_k_max=16)
    assert (small.num_chunks, small.chunks_pad, small.block) == (11, 16, 1024)


def test_dispatch_records_the_split_launch_in_the_variant_key():
    logits = torch.zeros(2, 5000)
    params = SamplingTensors.from_lists([0.0, 1.0], [0, 50], [1.0, 0.9], [0.0, 0.0], [1, 2], [0, 0])
    sample(logits, params)
    key = ("sample", torch.float32, False, split_sample_launch(5000), True)
    assert key in variant_log.seen()


def test_split_sampler_under_interpreter_matches_reference():
    result = interpreted._run_interpreted("kernels_sampling_split_cases.py", {})
    report = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, f"interpreted split-sampler tests failed:\n{report}"
    assert " passed" in result.stdout and "skipped" not in result.stdout, report
