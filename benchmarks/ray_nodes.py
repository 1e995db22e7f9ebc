"""A Ray cluster of several nodes on this machine, each node in a session of its own.

With scheduler autogroups (kernel.sched_autogroup_enabled=1) Linux shares the CPU fairly between
sessions, not threads: on a box other people keep busy, every process of one session together gets
one session's share, so a second replica in the same session gets no more CPU. Each node here is a
`ray start --block` started with `start_new_session=True`, so its raylet and the workers it spawns
(the replicas) form a session of their own, as separate machines would. `stop()` ends exactly the
processes of those sessions.

    with RayNodes(num_nodes=2, cpus_per_node=1) as address:
        ReplicaCluster.deploy(spec, ray_address=address)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OBJECT_STORE_BYTES = 100 * 1024 * 1024
START_TIMEOUT_S = 180.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _session_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3])
    except (OSError, ValueError, IndexError):
        return None


class RayNodes:
    """`num_nodes` Ray nodes (the first the head) with `cpus_per_node` CPUs each; a context manager
    yielding the head's address."""

    def __init__(self, num_nodes: int, cpus_per_node: int):
        self.num_nodes = num_nodes
        self.cpus_per_node = cpus_per_node
        self.port = _free_port()
        self.temp_dir = tempfile.mkdtemp(prefix="fw-ray-")  # not /tmp/ray: others' ray.init() never finds it
        self.nodes: list[subprocess.Popen] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _start(self, *args: str) -> None:
        ray = str(Path(sys.executable).with_name("ray"))
        command = [ray, "start", "--block", "--num-cpus", str(self.cpus_per_node), "--object-store-memory",
                   str(OBJECT_STORE_BYTES), "--disable-usage-stats", *args]
        self.nodes.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                           start_new_session=True, env=os.environ))

    def start(self) -> str:
        """Start the nodes; returns the head's address. `ray start` clusters use token authentication,
        so this process (the driver) is switched to it too (the token is Ray's, in ~/.ray); Ray reads
        the setting when it is imported, so call this before `import ray`."""
        os.environ["RAY_AUTH_MODE"] = "token"
        self._start("--head", "--port", str(self.port), "--include-dashboard", "false", "--temp-dir", self.temp_dir)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if self.nodes[0].poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the Ray head node did not start")
            time.sleep(0.5)
        for _ in range(self.num_nodes - 1):
            self._start("--address", self.address)
        return self.address

    def stop(self) -> None:
        """SIGTERM every process of the nodes' sessions, SIGKILL what is left after 10 s, and remove the
        nodes' temporary directory (sessions, logs)."""
        sessions = {node.pid for node in self.nodes}
        for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 0.0)):
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _session_of(int(p)) in sessions]
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + wait
            while wait and time.monotonic() < deadline and any(_session_of(pid) in sessions for pid in pids):
                time.sleep(0.2)
        for node in self.nodes:
            node.wait()
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
