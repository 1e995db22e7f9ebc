"""What a cold compile pays for the object member lists of the median generated schemas (issue 21).

A round is a fresh process per build (builds alternate): it lowers the `--around` schemas nearest the
generated set's median lowering time once, recording every member list (`objects._MemberChain`) they
build and which nodes of its members were not hashed yet.  Then, `--passes` times, it clears the
shared-mark and member-list tables and builds every recorded list again (`_MemberChain.body`) from
fresh copies of those unhashed nodes, as a cold compile meets them, timing the builds in thread CPU
(collector off).  Printed: per build, the least pass over all rounds, in µs a schema; `--prehash`
hashes the copies before the timing (what hashing the members' fresh IR costs is the difference).

    .venv/bin/python benchmarks/member_lists_cold.py --build s18base=/tmp/s18base --build HEAD=
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _unhashed(node, out: set[int]) -> None:
    """Add to `out` the ids of the nodes under `node` with no cached hash (a hashed node's are)."""
    stack = [node]
    while stack:
        top = stack.pop()
        if top._hash is not None or id(top) in out:
            continue
        out.add(id(top))
        sub = type(top)._sub_nodes
        if sub is not None:
            stack.extend(sub(top))


def _fresh(node, cold: set[int], memo: dict[int, object]):
    """`node` with the nodes that were unhashed (`cold`) copied, their hash and emptiness unset."""
    if id(node) not in cold:
        return node
    got = memo.get(id(node))
    if got is not None:
        return got
    copy = object.__new__(type(node))
    for name in type(node).__dataclass_fields__:
        value = getattr(node, name)
        if name == "items":
            value = tuple(_fresh(item, cold, memo) for item in value)
        elif name in ("item", "a", "b"):
            value = _fresh(value, cold, memo)
        elif name in ("_hash", "_empty"):
            value = None
        object.__setattr__(copy, name, value)
    memo[id(node)] = copy
    return copy


def child(names: list[str], passes: int, prehash: bool) -> float:
    """The least thread-CPU seconds of building the recorded member lists cold, over `passes`."""
    from formwork.grammar import shared_nodes
    from formwork.grammar.json_schema import lower_json_schema, objects

    recorded: list[tuple[tuple, set[int]]] = []
    original = objects._MemberChain.__init__

    def recording(self, *args) -> None:
        cold: set[int] = set()
        for member, _ in args[0]:
            _unhashed(member, cold)
        if args[1] is not None:
            _unhashed(args[1], cold)
        recorded.append((args, cold))
        original(self, *args)

    objects._MemberChain.__init__ = recording
    for name in names:
        lower_json_schema(json.loads((HERE / "schemas" / f"{name}.json").read_text())["schema"])
    objects._MemberChain.__init__ = original
    best = float("inf")
    for _ in range(passes):
        with shared_nodes._SHARED_LOCK:
            shared_nodes._MARK_OF.clear()
            shared_nodes._SHARED.clear()
        objects._CHAINS.clear()
        lists = []
        for (members, extra, comma, lo, hi), cold in recorded:
            memo: dict[int, object] = {}
            lists.append(([(_fresh(m, cold, memo), required) for m, required in members],
                          None if extra is None else _fresh(extra, cold, memo), comma, lo, hi))
        if prehash:
            for members, extra, *_ in lists:
                for member, _ in members:
                    hash(member)
                if extra is not None:
                    hash(extra)
        gc.disable()
        start = time.thread_time()
        for args in lists:
            objects._MemberChain(*args).body()
        best = min(best, time.thread_time() - start)
        gc.enable()
    return best


def _median_names(around: int) -> list[str]:
    """The `around` schemas nearest the median of one lowering pass (this environment's build)."""
    from formwork.grammar.json_schema import lower_json_schema

    times = {}
    for path in sorted((HERE / "schemas").glob("*.json")):
        schema = json.loads(path.read_text())["schema"]
        start = time.thread_time()
        lower_json_schema(schema)
        times[path.stem] = time.thread_time() - start
    order = sorted(times, key=times.get)
    middle = len(order) // 2
    return order[max(0, middle - around // 2):middle + (around + 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", default=[], metavar="LABEL=PYTHONPATH")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per build")
    parser.add_argument("--passes", type=int, default=30, help="cold builds of the lists per process")
    parser.add_argument("--around", type=int, default=60)
    parser.add_argument("--prehash", action="store_true", help="hash the members' fresh IR before timing")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        names = json.loads(args.child)
        print(json.dumps(child(names, args.passes, args.prehash) / len(names)))
        return
    names = _median_names(args.around)
    builds = [b.split("=", 1) for b in args.build] or [["this", ""]]
    got: dict[str, list[float]] = {label: [] for label, _ in builds}
    for r in range(args.rounds):
        for label, path in (builds if r % 2 == 0 else builds[::-1]):
            env = {**os.environ, "PYTHONPATH": path} if path else dict(os.environ)
            command = [sys.executable, __file__, "--child", json.dumps(names), "--passes", str(args.passes)]
            out = subprocess.run(command + ["--prehash"] * args.prehash, env=env, capture_output=True,
                                 text=True, check=True).stdout
            got[label].append(float(out.strip().splitlines()[-1]) * 1e6)
    print(f"member lists of the {len(names)} median schemas built cold{' (members pre-hashed)' * args.prehash}, "
          f"least of {args.passes} passes a process, load {os.getloadavg()[0]:.1f}")
    print("| build | µs a schema (least over rounds) | each round |")
    print("|---|---:|---|")
    for label, values in got.items():
        print(f"| {label} | {np.min(values):.1f} | {' '.join(f'{v:.1f}' for v in values)} |")


if __name__ == "__main__":
    main()
