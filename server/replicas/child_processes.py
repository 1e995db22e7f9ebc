"""This process's descendants, read from /proc, and a way to kill the ones a failed start left.

`ray.init` starts the GCS, the raylet and their helpers as children of the calling process; when the
node then times out registering, `ray.init` raises before Ray records the node, so `ray.shutdown()`
does not stop them and a retry would compete with them for the CPU it lacked.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

PROC = Path("/proc")


def descendants(pid: int | None = None) -> set[int]:
    """Process ids below `pid` (this process by default); empty where /proc is not readable."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    try:
        entries = list(PROC.iterdir())
    except OSError:
        return set()
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def kill_started_since(before: set[int]) -> set[int]:
    """SIGKILL every descendant of this process not in `before`; the ids it signalled."""
    started = descendants() - before
    for pid in started:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(pid, signal.SIGKILL)
    return started
