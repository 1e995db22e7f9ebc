"""The local Ray start retries only Ray's node-registration timeout (a loaded box can miss its fixed 30 s),
and kills the processes the timed-out attempt left (Ray's own shutdown does not know them)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import types

import pytest

from formwork.server.replicas import child_processes, cluster

TIMEOUT = Exception("The current node timed out during startup. This could happen because ...")


class FakeRay(types.ModuleType):
    """`ray.init` raises the queued errors in turn, then succeeds; `ray.shutdown` is counted. A failing
    init first starts a process with a child of its own, as a half-started Ray node leaves behind."""

    def __init__(self, errors: list[BaseException]):
        super().__init__("ray")
        self.errors = list(errors)
        self.inits = 0
        self.shutdowns = 0
        self.left: list[subprocess.Popen] = []

    def init(self, **kwargs):
        self.inits += 1
        assert kwargs["address"] == "local" and kwargs["num_cpus"] == 2
        if self.errors:
            self.left.append(subprocess.Popen(["sh", "-c", "sleep 60 & wait"]))
            raise self.errors.pop(0)

    def shutdown(self):
        self.shutdowns += 1


def start(monkeypatch, errors, attempts=3) -> FakeRay:
    fake = FakeRay(errors)
    monkeypatch.setitem(sys.modules, "ray", fake)
    cluster._start_local_ray(num_cpus=2, object_store_bytes=1 << 20, attempts=attempts)
    return fake


def test_a_registration_timeout_is_retried_after_shutting_the_half_started_node_down(monkeypatch):
    fake = start(monkeypatch, [TIMEOUT, TIMEOUT])
    assert (fake.inits, fake.shutdowns) == (3, 2)


def test_the_last_timeout_is_raised(monkeypatch):
    with pytest.raises(Exception, match="timed out during startup"):
        start(monkeypatch, [TIMEOUT, TIMEOUT, TIMEOUT], attempts=3)


def test_other_errors_are_not_retried(monkeypatch):
    fake = FakeRay([RuntimeError("port in use")])
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(RuntimeError, match="port in use"):
        cluster._start_local_ray(num_cpus=2, object_store_bytes=1 << 20)
    assert (fake.inits, fake.shutdowns) == (1, 0)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie awaiting its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pids: set[int], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_a_timed_out_attempt_leaves_no_processes_behind(monkeypatch):
    fake = start(monkeypatch, [TIMEOUT])
    (shell,) = fake.left
    shell.wait(timeout=10)
    assert shell.returncode == -9
    assert not child_processes.descendants() & {shell.pid}


def test_descendants_reach_grandchildren_and_only_new_ones_are_killed():
    older = subprocess.Popen(["sleep", "60"])
    try:
        before = child_processes.descendants()
        assert older.pid in before
        shell = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
        deadline = time.monotonic() + 10
        while len(child_processes.descendants(shell.pid)) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        (grandchild,) = child_processes.descendants(shell.pid)
        assert {shell.pid, grandchild} <= child_processes.descendants()
        killed = child_processes.kill_started_since(before)
        assert killed == {shell.pid, grandchild}
        shell.wait(timeout=10)
        assert wait_dead({grandchild})
        assert older.poll() is None and alive(older.pid)
    finally:
        older.kill()
        older.wait()


def test_descendants_of_a_process_without_children_are_none():
    assert child_processes.descendants(os.getpid()) >= set()
    lone = subprocess.Popen(["sleep", "60"])
    try:
        assert child_processes.descendants(lone.pid) == set()
    finally:
        lone.kill()
        lone.wait()
