"""Lowered `$ref` sites kept across compilations, by content.

Real-world schemas of one family repeat whole definitions: every Kubernetes kind carries
`ObjectMeta` and its four definitions, a bundle of API schemas its shared types.  A `$ref` site
(a subschema holding `$ref` and annotations only) lowers to the same IR wherever the contents it
reaches are the same, so its IR is kept in a process-wide table keyed by those contents: the
site itself and every `$ref` target reachable from it (the analysis's reference graph), each with
its JSON pointer, serialised with `pickle` (exact: it keeps key order, 1 / 1.0 / True apart, and
equal bytes unpickle to equal values), with the draft, the options and the depth where the
lowering depends on it.

Only what depends on nothing else is kept: a lowering that made a grammar rule, met a `$ref`
cycle, warned, tagged a unique array or built a product over values is not kept; nor a site whose
closure uses `$id`, anchors or dynamic references, or reaches another document; nor any site when
open values are unbounded (`max_nesting_depth=None`: they are a grammar rule).  What the kept
lowering did to the lowerer's counters is replayed on reuse (rule numbers, the open-value hint,
the nesting depth it reached, so a reuse where the lowering would have been refused for
nesting lowers afresh and is refused).
"""
from __future__ import annotations

import itertools
import pickle
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

from formwork.grammar.ir import Node
from formwork.schemas.keywords import ANNOTATION_KEYWORDS

if TYPE_CHECKING:
    from formwork.grammar.json_schema.expand import Sub
    from formwork.grammar.json_schema.lowering import Lowerer

MAX_KEPT = 2048  # lowered sites kept (the table is cleared when full)
#: keys a `$ref` site may hold besides `$ref` (none of them changes its language)
_SITE_KEYS = ANNOTATION_KEYWORDS | {"$ref"}
#: bytes in a serialised closure that make resolution depend on more than the pointers
_SCOPED = (b"$id", b"$anchor", b"$dynamic", b"$recursive")


@dataclass(frozen=True, slots=True)
class KeptLowering:
    """A site's IR and what its lowering did to the lowerer's counters."""

    node: Node
    rule_ids: int  # rule numbers taken
    open_values: bool  # whether it asked for open values (`AnyValue.calls` grew)
    frames: int  # how many conjunction frames deeper than its start it nested


_KEPT: dict[tuple, KeptLowering] = {}
_LOCK = threading.Lock()


def clear() -> None:
    """Forget every kept lowering."""
    with _LOCK:
        _KEPT.clear()


class RefLowerings:
    """One lowerer's access to the kept lowerings (its document's serialised targets, memoised)."""

    def __init__(self, lw: "Lowerer", max_frames: int) -> None:
        self.lw = lw
        self._max_frames = max_frames  # a lowering nesting this many frames is refused
        # None: nothing is kept (nor with unbounded open values: a site may use the any-JSON rule
        # another site of the lowering made)
        self._analysis = None if lw.options.max_nesting_depth is None else getattr(lw.doc, "analysis", None)
        self._context = (lw.doc.draft.name, lw.options.whitespace.__repr__(), lw.options.max_whitespace,
                         lw.options.forbid_additional_properties, lw.options.lenient,
                         lw.options.max_nesting_depth)
        self._pickled: dict[Any, Optional[bytes]] = {}  # target Location -> bytes (None: unusable)
        #: rule frames open at the deepest point of the lowering so far (see `note_frames`)
        self.deepest = 0

    def note_frames(self, open_frames: int) -> None:
        """Record that a conjunction was lowered with `open_frames` frames open."""
        if open_frames > self.deepest:
            self.deepest = open_frames

    def lower(self, sub: "Sub", depth: int, lower: Callable[[], Node]) -> Node:
        """`lower()`, the lowering of the `$ref` site `sub` at `depth`, or the kept one."""
        key = self._key(sub, depth)
        if key is None:
            return lower()
        lw = self.lw
        start = len(lw._frames)
        kept = _KEPT.get(key)
        if kept is not None and start + kept.frames < self._max_frames:
            lw._rule_ids = itertools.count(next(lw._rule_ids) + kept.rule_ids)
            if kept.open_values:
                lw.any_value.calls += 1
            self.note_frames(start + kept.frames)
            return kept.node
        state = self._state()
        outer_deepest, self.deepest = self.deepest, start
        first_rule = next(lw._rule_ids)
        lw._rule_ids = itertools.count(first_rule)
        calls = lw.any_value.calls
        try:
            node = lower()
        finally:
            deepest, self.deepest = self.deepest, max(outer_deepest, self.deepest)
        if self._state() == state:
            taken = next(lw._rule_ids) - first_rule
            lw._rule_ids = itertools.count(first_rule + taken)
            with _LOCK:
                if len(_KEPT) >= MAX_KEPT:
                    _KEPT.clear()
                _KEPT[key] = KeptLowering(node, taken, lw.any_value.calls != calls, deepest - start)
        return node

    def _state(self) -> tuple[int, ...]:
        """What a lowering that depends on more than its contents changes."""
        lw = self.lw
        return (len(lw.warnings), len(lw.rules), len(lw.unique_arrays), len(lw.value_products),
                lw.cycle_refs)

    def _key(self, sub: "Sub", depth: int) -> Optional[tuple]:
        """The contents `sub`'s lowering reads, or None when it is not a plain `$ref` site of the
        root document or its closure is unusable (see the module docstring)."""
        analysis, schema = self._analysis, sub.schema
        if analysis is None or sub.exclude or type(schema) is not dict or not _SITE_KEYS.issuperset(schema):
            return None
        root_uri = analysis.root.uri
        site = analysis.sites.get(type(analysis.root)(root_uri, sub.pointer))
        if site is None or site.ref != schema["$ref"]:
            return None
        site_bytes = pickle.dumps(schema, 5)
        if any(scoped in site_bytes for scoped in _SCOPED):
            return None
        parts: list[Any] = [self._context, depth if self.lw._indent else 0, site_bytes]
        seen, stack = set(), [site.target]
        while stack:
            target = stack.pop()
            if target in seen:
                continue
            seen.add(target)
            pickled = self._target_bytes(target)
            if pickled is None:
                return None
            parts.append((target.pointer, pickled))
            stack.extend(analysis.sites[at].target for at, _ in reversed(analysis.target_sites[target]))
        return tuple(parts)

    def _target_bytes(self, target: Any) -> Optional[bytes]:
        got = self._pickled.get(target, b"")
        if got != b"":
            return got
        analysis = self._analysis
        pickled: Optional[bytes] = None
        if target.uri == analysis.root.uri and target in analysis.targets \
                and target in analysis.target_sites:
            pickled = pickle.dumps(analysis.targets[target], 5)
            if any(scoped in pickled for scoped in _SCOPED):
                pickled = None
        self._pickled[target] = pickled
        return pickled

