"""A tensor-parallel worker that dies inside a step takes the engine down cleanly: every request in flight
ends with an error (no hang), /health answers 503, later requests are refused, later steps raise
TensorParallelError, and no worker is left behind. (A worker lost between steps, and a worker whose
parent is gone: `test_tensor_parallel.py`.)"""

import os
import signal
import sys
import threading
from pathlib import Path

import httpx
import pytest
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).parent))
from conftest_model import variant_dir  # noqa: E402
from conftest_server import in_process_server  # noqa: E402

from formwork.core import LLM  # noqa: E402
from formwork.core.config import EngineConfig  # noqa: E402
from formwork.core.distributed.runner import TensorParallelError  # noqa: E402

TIMEOUT = 60.0


def _gone(pid: int) -> bool:
    """The process has exited (reaped, or a zombie waiting for an init that does not reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _stream(url: str, lines: list[str], first: threading.Event) -> None:
    body = {"model": "tiny", "prompt": "Hello world", "max_tokens": 200, "ignore_eos": True, "stream": True}
    with httpx.stream("POST", f"{url}/v1/completions", json=body, timeout=TIMEOUT) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                lines.append(line)
                first.set()


def test_a_dead_worker_fails_every_request_and_the_health_check():
    config = EngineConfig(device="cpu", dtype="float32", tensor_parallel_size=2, max_num_seqs=4, num_gpu_blocks=64)
    with in_process_server(config, "tiny") as (url, client):
        engine = client.engine.engine
        runner = engine.runner
        try:
            assert httpx.get(f"{url}/health", timeout=TIMEOUT).status_code == 200
            (pid,) = runner.worker_pids
            kill = threading.Event()
            forward = runner.local.forward

            def forward_then_die(batch):  # the worker dies after it got the step, inside its collectives
                if kill.is_set():
                    os.kill(pid, signal.SIGKILL)
                return forward(batch)

            runner.local.forward = forward_then_die
            streams = [([], threading.Event()) for _ in range(2)]
            threads = [threading.Thread(target=_stream, args=(url, lines, first)) for lines, first in streams]
            for thread in threads:
                thread.start()
            assert all(first.wait(TIMEOUT) for _, first in streams)
            kill.set()
            for thread in threads:
                thread.join(TIMEOUT)
                assert not thread.is_alive(), "a request hung after its worker died"
            for lines, _ in streams:
                assert lines[-1] == "data: [DONE]"
                assert "TensorParallelError" in lines[-2] and "worker rank 1" in lines[-2], lines[-2]
            health = httpx.get(f"{url}/health", timeout=TIMEOUT)
            assert health.status_code == 503 and health.json()["error"]["code"] == "engine_dead"
            late = httpx.post(f"{url}/v1/completions", json={"model": "tiny", "prompt": "Hi", "max_tokens": 2},
                              timeout=TIMEOUT)
            assert late.status_code == 503 and late.json()["error"]["message"]
            with pytest.raises(TensorParallelError, match="worker rank 1"):
                runner.forward(runner.prepare([([1], 0, [0])], [True]))
            assert not engine.is_healthy and _gone(pid)
        finally:
            engine.close()


# Stands in for `python -m formwork.core.distributed.worker FD` (argv[3] is FD): a worker that fails at once.
FAILING_WORKER = """#!{python}
import sys
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[3]))
conn.recv_bytes()  # the spec, unread: unpickling it would import torch
{action}
"""


@pytest.mark.parametrize("action, message", [
    ("conn.send(('error', 'RuntimeError: no device for rank 1')); sys.exit(1)",
     "worker rank 1 failed: RuntimeError: no device for rank 1"),
    ("sys.exit(3)", "worker rank 1 \\(pid \\d+\\) exited with status 3"),
])
def test_a_worker_that_fails_at_start_up_stops_the_start_with_its_reason(action, message, tmp_path, monkeypatch):
    fake = tmp_path / "python"
    fake.write_text(FAILING_WORKER.format(python=sys.executable, action=action))
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(TensorParallelError, match=message):
        LLM(variant_dir("llama"), device="cpu", tensor_parallel_size=2)
    assert not dist.is_initialized()  # the group was never joined: a next engine may start
