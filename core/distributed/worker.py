"""A tensor-parallel worker: rank r >= 1 of an engine, run as ``python -m formwork.core.distributed.worker FD``.

FD is this process's end of a socket pair whose other end rank 0 holds (`runner`). Over it the worker
receives its `WorkerSpec`, says "joining" before it joins the process group and "ready" once its
shard is loaded and its KV pool allocated, then runs every "step" rank 0 sends on its own shard (the
model's collectives pair it with the other ranks; it sends nothing back) until "stop" or until the
socket closes: rank 0 gone, for whatever reason, means this worker exits too. A failure is sent as
("error", message) before the worker exits with status 1.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection

import torch
import torch.distributed as dist

from formwork.core.config import EngineConfig
from formwork.core.distributed.group import join_group
from formwork.core.model_files import ModelFiles
from formwork.core.model_runner import ModelRunner

logger = logging.getLogger(__name__)


@dataclass
class WorkerSpec:
    """What a worker needs to build its shard: the checkpoint (its files without the tokenizer), the
    engine options and where the process group meets (rank 0's TCPStore)."""

    rank: int
    size: int
    store_host: str
    store_port: int
    store_timeout_s: float
    files: ModelFiles
    config: EngineConfig
    max_model_len: int
    num_threads: int


def run_worker(conn: Connection) -> int:
    """Serve rank 0's messages on `conn` until told to stop or disconnected; the exit status."""
    try:
        spec: WorkerSpec = conn.recv()
    except EOFError:
        return 1
    torch.set_num_threads(spec.num_threads)
    try:
        conn.send(("joining", None))
        store = dist.TCPStore(spec.store_host, spec.store_port, spec.size, is_master=False,
                              timeout=timedelta(seconds=spec.store_timeout_s))
        tp = join_group(spec.rank, spec.size, store, spec.config.rank_device(spec.rank))
        runner = ModelRunner.for_engine(spec.files, spec.config, spec.max_model_len, tp)
        conn.send(("ready", None))
        _serve(conn, runner)
    except Exception as exc:
        logger.exception("tensor-parallel worker %d failed", spec.rank)
        with contextlib.suppress(OSError):
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return 1
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


def _serve(conn: Connection, runner: ModelRunner) -> None:
    while True:
        try:
            kind, *payload = conn.recv()
        except EOFError:  # rank 0 has gone
            return
        if kind == "step":
            runner.forward(runner.prepare(*payload))
        elif kind == "report":
            conn.send(("report", runner.shard_report()))
        elif kind == "stop":
            return
        else:
            raise ValueError(f"unknown message {kind!r} from rank 0")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: rank 0 decides
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_worker(Connection(int(argv[1])))


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # skip the interpreter's teardown of torch (seconds on a busy machine): nothing is left to do
