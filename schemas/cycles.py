"""Reference cycles: elementary cycles of the `$ref` graph, and cycles that never descend into
the instance (validation or generation along them would never terminate)."""
from __future__ import annotations

from formwork.schemas.analysis import Analysis
from formwork.schemas.refs import Location

#: Most cycles listed (a graph can have exponentially many elementary cycles).
MAX_CYCLES = 100
_MAX_STEPS = 100_000

Graph = dict[Location, list[tuple[Location, bool]]]


def ref_graph(analysis: Analysis) -> Graph:
    """Edges site -> (site, descends): evaluating the first `$ref` evaluates the second,
    `descends` telling whether a member of the instance is entered on the way."""
    graph: Graph = {}
    for location, site in sorted(analysis.sites.items()):
        graph[location] = sorted(set(analysis.target_sites.get(site.target, [])))
    return graph


def elementary_cycles(graph: Graph, limit: int = MAX_CYCLES) -> list[list[Location]]:
    """Elementary cycles, each starting at its smallest site, in a deterministic order, at most
    `limit` of them (and bounded work)."""
    order = {node: rank for rank, node in enumerate(sorted(graph))}
    cycles: list[list[Location]] = []
    steps = 0
    for start in sorted(graph):
        path = [start]
        on_path = {start}
        iterators = [iter(graph[start])]
        while iterators:
            steps += 1
            if steps > _MAX_STEPS or len(cycles) >= limit:
                return cycles
            nxt = next(iterators[-1], None)
            if nxt is None:
                iterators.pop()
                on_path.discard(path.pop())
                continue
            node = nxt[0]
            if node == start:
                cycles.append(list(path))
            elif node not in on_path and node in order and order[node] > order[start]:
                path.append(node)
                on_path.add(node)
                iterators.append(iter(graph[node]))
    return cycles


def non_descending_cycle(graph: Graph) -> list[Location] | None:
    """A cycle using only edges that do not descend into the instance, or None."""
    colour: dict[Location, int] = {}  # 1 on the DFS stack, 2 done
    for root in sorted(graph):
        if root in colour:
            continue
        path = [root]
        colour[root] = 1
        iterators = [iter([dst for dst, descends in graph[root] if not descends])]
        while iterators:
            nxt = next(iterators[-1], None)
            if nxt is None:
                iterators.pop()
                colour[path.pop()] = 2
                continue
            state = colour.get(nxt)
            if state == 1:
                return path[path.index(nxt):]
            if state is None and nxt in graph:
                colour[nxt] = 1
                path.append(nxt)
                iterators.append(iter([dst for dst, descends in graph[nxt] if not descends]))
    return None
