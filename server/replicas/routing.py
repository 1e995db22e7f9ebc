"""Which replica serves a prompt: the one that has its leading token blocks cached, else the least loaded.

A prompt is cut into blocks of `block_size` token ids (the engines' KV block size) and each full
block gets a chain hash (the hash of the block and every block before it), so equal hashes mean equal
prefixes, as in the engines' own prefix caches. The router remembers, for the most recent
`capacity` block hashes, the replica that last received them. A new prompt goes to the replica
holding its longest remembered prefix, unless that replica is down or carries more than
`max_imbalance` requests above the least-loaded one; otherwise (and for prompts shorter than one
block) it goes to the least-loaded replica that is up, ties taking turns. The router is plain Python
with no Ray in it; `ReplicaPool` drives it from one event loop.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

DEFAULT_CAPACITY = 1 << 16
DEFAULT_MAX_IMBALANCE = 4


class NoReplicaError(RuntimeError):
    """Every replica is down."""


def block_hashes(token_ids: Sequence[int], block_size: int) -> list[int]:
    """Chain hashes of the prompt's full blocks: entry i identifies tokens [0, (i + 1) * block_size)."""
    hashes, previous = [], 0
    for end in range(block_size, len(token_ids) + 1, block_size):
        previous = hash((previous, tuple(token_ids[end - block_size:end])))
        hashes.append(previous)
    return hashes


@dataclass
class Route:
    """A routing decision: the replica, how many leading blocks it is believed to hold, and the time
    the decision took."""

    replica: int
    matched_blocks: int
    seconds: float


@dataclass
class ReplicaLoad:
    """What the router knows of one replica."""

    in_flight: int = 0
    up: bool = True
    routed: int = 0
    routed_by_prefix: int = 0


@dataclass
class PrefixRouter:
    """Prefix-affinity routing over `num_replicas` replicas, falling back to the least loaded."""

    num_replicas: int
    block_size: int
    capacity: int = DEFAULT_CAPACITY
    max_imbalance: int = DEFAULT_MAX_IMBALANCE
    replicas: list[ReplicaLoad] = field(init=False)
    _owners: OrderedDict[int, int] = field(init=False, default_factory=OrderedDict)
    _turn: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.num_replicas < 1 or self.block_size < 1 or self.capacity < 1 or self.max_imbalance < 0:
            raise ValueError(f"invalid router settings: {self.num_replicas} replicas, block size "
                             f"{self.block_size}, capacity {self.capacity}, max imbalance {self.max_imbalance}")
        self.replicas = [ReplicaLoad() for _ in range(self.num_replicas)]

    def route(self, token_ids: Sequence[int]) -> Route:
        """Choose a replica for a prompt, count the request against it and remember its blocks there.
        Raises `NoReplicaError` when every replica is down."""
        start = time.perf_counter()
        up = [i for i, r in enumerate(self.replicas) if r.up]
        if not up:
            raise NoReplicaError(f"all {self.num_replicas} replicas are down")
        hashes = block_hashes(token_ids, self.block_size)
        least = min(self.replicas[i].in_flight for i in up)
        replica, matched = self._cached_on(hashes, least)
        if replica is None:
            idle = [i for i in up if self.replicas[i].in_flight == least]
            replica = idle[self._turn % len(idle)]
            self._turn += 1
        for h in hashes:
            self._owners[h] = replica
            self._owners.move_to_end(h)
        while len(self._owners) > self.capacity:
            self._owners.popitem(last=False)
        load = self.replicas[replica]
        load.in_flight += 1
        load.routed += 1
        load.routed_by_prefix += matched > 0
        return Route(replica, matched, time.perf_counter() - start)

    def _cached_on(self, hashes: list[int], least: int) -> tuple[int | None, int]:
        """The replica holding the longest remembered prefix, if it is up and not overloaded."""
        for count in range(len(hashes), 0, -1):
            owner = self._owners.get(hashes[count - 1])
            if owner is not None:
                load = self.replicas[owner]
                if load.up and load.in_flight <= least + self.max_imbalance:
                    return owner, count
                return None, 0
        return None, 0

    def finished(self, replica: int) -> None:
        """A request routed to `replica` has ended."""
        self.replicas[replica].in_flight -= 1

    def mark(self, replica: int, up: bool) -> None:
        """Record a replica as up or down; a replica coming back up starts with an empty cache."""
        load = self.replicas[replica]
        if up and not load.up:
            for h in [h for h, owner in self._owners.items() if owner == replica]:
                del self._owners[h]
        load.up = up
