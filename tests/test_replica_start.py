"""The local Ray start retries only Ray's node-registration timeout (a loaded box can miss its fixed 30 s)."""
from __future__ import annotations

import sys
import types

import pytest

from formwork.server.replicas import cluster

TIMEOUT = Exception("The current node timed out during startup. This could happen because ...")


class FakeRay(types.ModuleType):
    """`ray.init` raises the queued errors in turn, then succeeds; `ray.shutdown` is counted."""

    def __init__(self, errors: list[BaseException]):
        super().__init__("ray")
        self.errors = list(errors)
        self.inits = 0
        self.shutdowns = 0

    def init(self, **kwargs):
        self.inits += 1
        assert kwargs["address"] == "local" and kwargs["num_cpus"] == 2
        if self.errors:
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
