"""NFA moves per state, packed in the flat layout of `grammar/native/common/_nfa_flat.h` (for tests that feed
the C builder and subset core hand-made automata)."""
from __future__ import annotations

import array
from collections.abc import Sequence


def flat_moves(eps: Sequence, edges: Sequence) -> bytes:
    """Pack per-state epsilon targets and (lo, hi, target) edges; None: a state without moves
    (a region's)."""
    eps_at, edge_at = [0], [0]
    for x, y in zip(eps, edges, strict=True):
        eps_at.append(eps_at[-1] + len(x or ()))
        edge_at.append(edge_at[-1] + len(y or ()))
    targets = [t for x in eps for t in x or ()]
    triples = [v for y in edges for edge in y or () for v in edge]
    return array.array("i", [len(eps), *eps_at, *edge_at, *targets, *triples]).tobytes()
