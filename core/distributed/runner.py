"""Rank 0 of a tensor-parallel engine: its own shard, plus worker processes for ranks 1..N-1 in lockstep.

Design. Rank 0 (the engine's process) keeps the only scheduler, block manager and grammar manager; every
rank holds a Megatron-style shard of the model and the same paged KV pool layout over its own KV heads,
so one block table is valid on all of them. A step's inputs (the scheduled token ids with their
computed-token counts and block tables, and which rows want logits) go to each worker as one pickled
message over its socket pair, and every rank builds the same `ForwardBatch` from them and runs the same
forward; the layers' all-reduces pair the ranks up, and the vocabulary-parallel lm_head gathers the
logits on rank 0 once, where the sampler, grammar masks and everything after them run unchanged.

Why a socket per worker and not a collective broadcast for the inputs: an idle worker then waits in a
plain `recv`, which no collective timeout (gloo's, NCCL's watchdog) can end, and the socket closing is
how a worker learns that rank 0 has gone (it exits: no orphans). The inputs are a few KB of integers per
step, so the copy per worker costs less than a forward. Why gather logits instead of sampling on every
rank: sampling, logits processors and grammar masks then stay in one place, and the price is one
[rows, vocab] gather per step.

Failure: a worker that dies (or fails) makes the next step, or the collective a step is in, raise
`TensorParallelError`; the runner then stops the other workers and every later step raises the same
error, so the engine fails each request instead of hanging, and `healthy` turns False as soon as a
worker has exited, even between steps. One tensor-parallel engine runs per process (torch.distributed
has one default process group): `close()` ends it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection

import torch
import torch.distributed as dist
from torch import Tensor

from formwork.core.config import EngineConfig
from formwork.core.distributed.group import join_group
from formwork.core.distributed.worker import WorkerSpec
from formwork.core.forward_batch import ForwardBatch
from formwork.core.model_files import ModelFiles
from formwork.core.model_runner import ModelRunner
from formwork.core.models import MODEL_REGISTRY
from formwork.core.models.sharding import check_divisible

STORE_HOST = "127.0.0.1"
STARTUP_TIMEOUT_S = 300.0  # for a worker to start, join the group and load its shard
STOP_TIMEOUT_S = 5.0  # for a worker to exit after "stop" before it is killed
EXIT_GRACE_S = 5.0  # after a failed step, for a dead worker's exit status to show


class TensorParallelError(RuntimeError):
    """A tensor-parallel worker failed or exited: the engine cannot run another step."""


@dataclass
class TensorParallelStep:
    """A prepared step: its inputs, as the workers receive them, and rank 0's own batch."""

    items: list[tuple[list[int], int, list[int]]]
    logits_for: list[bool]
    batch: ForwardBatch


@dataclass
class _Worker:
    rank: int
    process: subprocess.Popen
    conn: Connection

    def exit_reason(self) -> str | None:
        """Why this worker is gone (its own error message when it sent one), or None while it runs."""
        message = self._error_message()
        code = self.process.poll()
        if code is None and message is None:
            return None
        where = f"tensor-parallel worker rank {self.rank} (pid {self.process.pid})"
        if message is not None:
            return f"{where} failed: {message}"
        return f"{where} exited with status {code}"

    def _error_message(self) -> str | None:
        with contextlib.suppress(OSError, EOFError):
            while self.conn.poll():
                kind, payload = self.conn.recv()
                if kind == "error":
                    return payload
        return None

    def expect(self, kind: str, deadline: float) -> object:
        """Wait for the worker's next message, which must be `kind`; raises if it fails, exits or is late."""
        while time.monotonic() < deadline:
            if self.conn.poll(0.05):
                try:
                    got, payload = self.conn.recv()
                except EOFError:  # a worker closes its socket only by exiting: wait for its status
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self.process.wait(max(deadline - time.monotonic(), 0.0))
                    raise TensorParallelError(self.exit_reason() or
                                              f"tensor-parallel worker rank {self.rank} closed its connection")
                if got == kind:
                    return payload
                raise TensorParallelError(f"tensor-parallel worker rank {self.rank} failed: {payload}")
            reason = self.exit_reason()
            if reason is not None:
                raise TensorParallelError(reason)
        raise TensorParallelError(f"tensor-parallel worker rank {self.rank} sent no {kind!r} within "
                                  f"{STARTUP_TIMEOUT_S:.0f} s")


def _stop_workers(workers: list[_Worker], graceful: bool) -> None:
    """End every worker (asked to stop first when `graceful`, killed past `STOP_TIMEOUT_S`), reap them and
    leave torch.distributed's default group."""
    for worker in workers:
        if graceful and worker.process.poll() is None:
            with contextlib.suppress(OSError):
                worker.conn.send(("stop",))
    deadline = time.monotonic() + (STOP_TIMEOUT_S if graceful else 0.0)
    for worker in workers:
        try:
            worker.process.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            worker.process.kill()
            worker.process.wait()
        worker.conn.close()
    workers.clear()
    if dist.is_initialized():
        dist.destroy_process_group()


class TensorParallelRunner:
    """The engine's runner when `config.tensor_parallel_size > 1`: the interface of `ModelRunner` that the
    engine uses (`prepare`, `forward`, the pool's sizes), over N processes (see the module docstring)."""

    def __init__(self, files: ModelFiles, config: EngineConfig, max_model_len: int):
        size = config.tensor_parallel_size
        args = MODEL_REGISTRY[files.architecture].make_args(files.hf_config)
        check_divisible(args.num_heads, args.num_kv_heads, args.intermediate_size, size)
        if dist.is_initialized():
            raise TensorParallelError("a tensor-parallel engine is already running in this process "
                                      "(one per process: close() it first)")
        self._workers: list[_Worker] = []
        self._failure: str | None = None
        self._finalizer = weakref.finalize(self, _stop_workers, self._workers, False)
        store = dist.TCPStore(STORE_HOST, 0, size, is_master=True, wait_for_workers=False,
                              timeout=timedelta(seconds=STARTUP_TIMEOUT_S))
        worker_files = dataclasses.replace(files, tokenizer=None)  # workers need no tokenizer
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        try:
            for rank in range(1, size):
                spec = WorkerSpec(rank, size, STORE_HOST, store.port, STARTUP_TIMEOUT_S, worker_files, config,
                                  max_model_len, torch.get_num_threads())
                self._workers.append(_spawn(spec))
            for worker in self._workers:
                worker.expect("joining", deadline)
            tp = join_group(0, size, store, config.rank_device(0))
            self.local = ModelRunner.for_engine(files, config, max_model_len, tp)
            for worker in self._workers:
                worker.expect("ready", deadline)
        except BaseException as exc:  # Ctrl-C included: no worker outlives a failed start
            reasons = [r for r in (w.exit_reason() for w in self._workers) if r is not None]
            self._finalizer.detach()
            _stop_workers(self._workers, graceful=False)
            if reasons and isinstance(exc, Exception) and not isinstance(exc, TensorParallelError):
                raise TensorParallelError(f"tensor-parallel start-up failed: {'; '.join(reasons)}") from exc
            raise

    # ---- what the engine reads ------------------------------------------------------------------

    @property
    def device(self) -> torch.device:
        return self.local.device

    @property
    def dtype(self) -> torch.dtype:
        return self.local.dtype

    @property
    def block_size(self) -> int:
        return self.local.block_size

    @property
    def num_blocks(self) -> int:
        return self.local.num_blocks

    @property
    def vocab_size(self) -> int:
        return self.local.vocab_size

    @property
    def model(self):
        """Rank 0's shard of the model."""
        return self.local.model

    # ---- steps ----------------------------------------------------------------------------------

    def prepare(self, items: list[tuple[list[int], int, list[int]]], logits_for: list[bool]) -> TensorParallelStep:
        """Rank 0's batch for these inputs (`ModelRunner.prepare`), kept with the inputs for the workers."""
        return TensorParallelStep(items, logits_for, self.local.prepare(items, logits_for))

    def forward(self, step: TensorParallelStep) -> Tensor:
        """Run `step` on every rank; the float32 logits of the rows that want them (gathered on rank 0)."""
        self._check_workers()
        try:
            for worker in self._workers:
                worker.conn.send(("step", step.items, step.logits_for))
            return self.local.forward(step.batch)
        except Exception as exc:
            self._await_exit(EXIT_GRACE_S)  # a collective that failed on a dead peer: name that worker
            raise self._fail(f"a step failed: {type(exc).__name__}: {exc}") from exc
        except BaseException:  # interrupted inside a collective: the ranks are out of step
            self._fail("a step was interrupted")
            raise

    def shard_reports(self) -> list[dict]:
        """`ModelRunner.shard_report` of every rank, in rank order (call it from the thread that steps the
        engine: it shares the workers' sockets)."""
        self._check_workers()
        reports = [self.local.shard_report()]
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        for worker in self._workers:
            worker.conn.send(("report",))
            reports.append(worker.expect("report", deadline))
        return reports

    # ---- health and shutdown --------------------------------------------------------------------

    @property
    def healthy(self) -> bool:
        """False once a worker has exited or a step failed (or after `close`)."""
        return self._failure is None and all(w.process.poll() is None for w in self._workers)

    @property
    def worker_pids(self) -> list[int]:
        return [w.process.pid for w in self._workers]

    def close(self) -> None:
        """Stop the workers and leave the process group; later steps raise TensorParallelError."""
        if self._failure is None:
            self._failure = "the tensor-parallel engine was closed"
        if self._finalizer.detach() is not None:  # the first close: this engine's group is still the current one
            _stop_workers(self._workers, graceful=True)

    def _check_workers(self) -> None:
        if self._failure is not None:
            raise TensorParallelError(self._failure)
        for worker in self._workers:
            reason = worker.exit_reason()
            if reason is not None:
                raise self._fail(reason)

    def _await_exit(self, seconds: float) -> None:
        """Wait up to `seconds` for some worker to have exited (its exit status shows a moment after its
        sockets close)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and all(w.process.poll() is None for w in self._workers):
            time.sleep(0.01)

    def _fail(self, reason: str) -> TensorParallelError:
        """Record why the engine stopped (a worker's own reason first), stop every worker; the error to raise."""
        reasons = [r for r in (w.exit_reason() for w in self._workers) if r is not None]
        self._failure = f"the tensor-parallel engine has stopped: {reasons[0] if reasons else reason}"
        if self._finalizer.detach() is not None:
            _stop_workers(self._workers, graceful=False)
        return TensorParallelError(self._failure)


def _spawn(spec: WorkerSpec) -> _Worker:
    """Start rank `spec.rank` as a fresh interpreter (not a fork: rank 0 may hold threads and CUDA state)
    with one end of a socket pair, and send it its spec."""
    ours, theirs = socket.socketpair()
    with theirs:
        process = subprocess.Popen([sys.executable, "-m", "formwork.core.distributed.worker", str(theirs.fileno())],
                                   pass_fds=(theirs.fileno(),))
    conn = Connection(ours.detach())
    conn.send(spec)
    return _Worker(spec.rank, process, conn)
