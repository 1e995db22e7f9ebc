"""Suite-wide settings: one torch thread here and in spawned servers.

On a small shared CPU, tiny models run several times faster on one thread than on two
(the threads fight over cores that other processes also use).
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402  (after the thread setting, so spawned children inherit it)

torch.set_num_threads(1)
