"""Reference cycles: elementary cycles of the `$ref` graph (Johnson's algorithm, iterative), and
cycles that never descend into the instance (validation or generation along them would never
terminate)."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from formwork.schemas.analysis import Analysis
from formwork.schemas.refs import Location

#: Most cycles listed (a graph can have exponentially many elementary cycles).
MAX_CYCLES = 100

Graph = dict[Location, list[tuple[Location, bool]]]


def ref_graph(analysis: Analysis) -> Graph:
    """Edges site -> (site, descends): evaluating the first `$ref` evaluates the second,
    `descends` telling whether a member of the instance is entered on the way."""
    graph: Graph = {}
    for location, site in sorted(analysis.sites.items()):
        graph[location] = sorted(set(analysis.target_sites.get(site.target, [])))
    return graph


def strongly_connected_components(nodes: set[Location],
                                  successors: dict[Location, list[Location]]) -> list[set[Location]]:
    """Tarjan's algorithm without recursion, over the subgraph induced by `nodes`."""
    index: dict[Location, int] = {}
    low: dict[Location, int] = {}
    on_stack: set[Location] = set()
    stack: list[Location] = []
    components: list[set[Location]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(successors[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            nxt = next((c for c in children if c in nodes), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(successors[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _circuits(start: Location, successors: dict[Location, list[Location]],
              nodes: set[Location]) -> Iterator[list[Location]]:
    """Johnson's circuit search: the elementary cycles through `start` inside `nodes`."""
    blocked = {start}
    blockers: dict[Location, set[Location]] = defaultdict(set)
    path = [start]
    closed = [False]
    work = [iter([c for c in successors[start] if c in nodes])]
    while work:
        nxt = next(work[-1], None)
        if nxt is not None:
            if nxt == start:
                yield list(path)
                closed[-1] = True
            elif nxt not in blocked:
                path.append(nxt)
                closed.append(False)
                blocked.add(nxt)
                work.append(iter([c for c in successors[nxt] if c in nodes]))
            continue
        work.pop()
        node = path.pop()
        if closed.pop():
            pending = [node]
            while pending:
                member = pending.pop()
                if member in blocked:
                    blocked.discard(member)
                    pending.extend(blockers.pop(member, ()))
            if closed:
                closed[-1] = True
        else:
            for succ in successors[node]:
                if succ in nodes:
                    blockers[succ].add(node)


def elementary_cycles(graph: Graph, limit: int = MAX_CYCLES) -> list[list[Location]]:
    """Elementary cycles, each starting at its smallest site, sorted, at most `limit`."""
    successors = {node: sorted({dst for dst, _ in edges if dst in graph})
                  for node, edges in graph.items()}
    cycles = [[node] for node in sorted(graph) if node in successors[node]]
    without_loops = {node: [s for s in succ if s != node] for node, succ in successors.items()}
    work = [c for c in strongly_connected_components(set(graph), without_loops) if len(c) > 1]
    while work and len(cycles) < limit:
        component = work.pop()
        start = min(component)
        for cycle in _circuits(start, without_loops, component):
            cycles.append(cycle)
            if len(cycles) >= limit:
                break
        rest = component - {start}
        work.extend(c for c in strongly_connected_components(rest, without_loops) if len(c) > 1)
    return sorted(cycles)[:limit]


def non_descending_cycle(graph: Graph) -> list[Location] | None:
    """A cycle using only edges that do not descend into the instance, or None."""
    flat = {node: sorted({dst for dst, descends in edges if not descends and dst in graph})
            for node, edges in graph.items()}
    for node in sorted(flat):
        if node in flat[node]:
            return [node]
    for component in strongly_connected_components(set(flat), flat):
        if len(component) > 1:
            start = min(component)
            return next(_circuits(start, flat, component))
    return None
