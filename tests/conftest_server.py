"""Helpers for server tests: run `formwork serve` as a subprocess on a free loopback port, or an
in-process server on the tiny Llama.

    server = ServerProcess.start(model_dir, "--api-key", "k")
    server.url  # http://127.0.0.1:PORT
    server.stop()

    with in_process_server(EngineConfig(max_num_seqs=4), "tiny") as (url, engine): ...
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT = 180.0

# The shared tiny-model server of the server tests.
API_KEY = "test-key"
MODEL = "tiny"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
TINY_SERVER_ARGS = ("--served-model-name", MODEL, "--api-key", API_KEY, "--max-body-bytes", "64KiB",
                    "--max-schema-bytes", "8KiB", "--max-num-seqs", "32")


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the test process dies, so no server outlives a killed run."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A live `formwork serve` subprocess; its log is kept in a temp file for failure messages."""

    def __init__(self, proc: subprocess.Popen, port: int, log_path: Path):
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_path

    @classmethod
    def start(cls, model: str | Path | None, *args: str, startup_timeout: float = STARTUP_TIMEOUT) -> "ServerProcess":
        port = free_port()
        log = Path(tempfile.mkstemp(prefix="formwork-serve-", suffix=".log")[1])
        cmd = [sys.executable, "-m", "formwork.cli", "serve", "--port", str(port), "--log-level", "info", *args]
        if model is not None:
            cmd += ["--model", str(model)]
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env,
                                    preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        server = cls(proc, port, log)
        server.wait_ready(startup_timeout)
        return server

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"formwork serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"formwork serve did not become healthy in {timeout}s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log_path.unlink(missing_ok=True)


_SHARED: dict[tuple, ServerProcess] = {}


def shared_server(model: str | Path | None, *args: str) -> ServerProcess:
    """One server per (model, args) for the whole test session, stopped at interpreter exit."""
    key = (str(model), args)
    server = _SHARED.get(key)
    if server is None or server.proc.poll() is not None:
        server = _SHARED[key] = ServerProcess.start(model, *args)
        atexit.register(server.stop)
    return server


def tiny_server(*extra_args: str) -> ServerProcess:
    """The session's server on the tiny random Llama of `tiny_models` (plus `extra_args`)."""
    from tiny_models import tiny_model_dir

    return shared_server(tiny_model_dir("llama"), *TINY_SERVER_ARGS, *extra_args)


@contextmanager
def in_process_server(config: Any, name: str, **server_options: Any) -> Iterator[tuple[str, Any]]:
    """An in-process server on the tiny Llama with `config` (an `EngineConfig`), served as `name`
    (other `ServerConfig` fields from `server_options`): yields its URL and its `EngineClient`;
    stops both on exit."""
    import uvicorn

    from formwork.core.async_engine import AsyncLLMEngine
    from formwork.server.app import ServerConfig, build_app
    from formwork.server.engine_client import EngineClient
    from tiny_models import tiny_model_dir

    engine = EngineClient(AsyncLLMEngine(tiny_model_dir("llama"), config))
    engine.start()
    server = uvicorn.Server(uvicorn.Config(build_app(engine, ServerConfig(served_model_name=name, **server_options)),
                                           host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}", engine
    finally:
        server.should_exit = True
        thread.join(10)
        engine.shutdown()
