"""Suite-wide settings: one torch thread here and in spawned servers; deterministic hypothesis in CI.

On a small shared CPU, tiny models run several times faster on one thread than on two
(the threads fight over cores that other processes also use). In CI (`CI=true`) hypothesis draws
the same examples on every run, so a landing never depends on a lucky draw; locally it explores.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402  (after the thread setting, so spawned children inherit it)
from hypothesis import settings  # noqa: E402

torch.set_num_threads(1)

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
