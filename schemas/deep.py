"""Running recursive third-party code (jsonschema's meta-schema check) on deeply nested schemas.

jsonschema recurses through several Python frames per schema level, so a schema near the depth
limit would overflow the default recursion limit. Deep inputs are therefore checked on a helper
thread with a large stack while the recursion limit is raised (under a lock, restored after).
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Nesting depth up to which the calling thread's own stack is used.
SHALLOW_DEPTH = 32
_FRAMES_PER_LEVEL = 24
_STACK_BYTES = 256 * 1024 * 1024
_lock = threading.Lock()


def call_with_depth(fn: Callable[[], T], depth: int) -> T:
    """`fn()`, on a big-stack thread with a raised recursion limit when `depth` is large."""
    if depth <= SHALLOW_DEPTH:
        return fn()
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    with _lock:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        sys.setrecursionlimit(max(old_limit, 1000 + depth * _FRAMES_PER_LEVEL))
        worker = threading.Thread(target=run, name="formwork-schema-check")
        try:
            threading.stack_size(_STACK_BYTES)
            try:
                worker.start()  # the OS thread (and its stack) is created here
            finally:
                threading.stack_size(old_stack)
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if failure:
        raise failure[0]
    return result[0]
