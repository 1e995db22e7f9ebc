"""Lowered `$ref` sites kept across compilations, by content.

Real-world schemas of one family repeat whole definitions: every Kubernetes kind carries
`ObjectMeta` and its four definitions, a bundle of API schemas its shared types.  A `$ref` site
(a subschema holding `$ref` and annotations only) lowers to the same IR wherever the contents it
reaches are the same, so its IR is kept in a process-wide table keyed by those contents: the
site's `$ref` (not its annotations: the Kubernetes kinds describe `metadata` in 14 ways) and
every `$ref` target reachable from it (the analysis's reference graph), each with
its JSON pointer, serialised with `pickle` (exact: it keeps key order, 1 / 1.0 / True apart, and
equal bytes unpickle to equal values), with the draft, the options and the depth where the
lowering depends on it.  So is an inline subschema with `oneOf`/`anyOf` (no `$id` or anchor
inside), by its contents without its annotations and, if it holds `$ref`s, their targets' closure:
a schema repeating one under several properties (markdownlint's rule aliases, webpack's filter
options) lowers it once.

Only what depends on nothing else is kept: a lowering that made a grammar rule, met a `$ref`
cycle, warned, tagged a unique array or built a product over values is not kept; nor a site whose
closure uses `$id`, anchors or dynamic references, or reaches another document; nor any site when
open values are unbounded (`max_nesting_depth=None`: they are a grammar rule).  What the kept
lowering did to the lowerer's counters is replayed on reuse (rule numbers, the open-value hint,
the nesting depth it reached, so a reuse where the lowering would have been refused for
nesting lowers afresh and is refused).  The table keeps the sites used last (`MAX_KEPT`): a
family of schemas compiled after many others still finds its shared sites (a table cleared when
full lost them all at once).  Its IR holds shared marks and lexemes whose tables
evict their oldest quarter when full: after such a round in either table, the sites kept before
are lowered afresh (and kept again).  A reuse leaves no within-compile memo entries for the
subschemas inside the site, so a later identical one (the `true` of an `additionalProperties`) is
lowered rather than found: the rules after it may be numbered higher than afresh, with the same
bodies (the same language).
"""
from __future__ import annotations

import pickle
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from formwork.grammar import lexemes, shared_nodes
from formwork.grammar.ir import Node
from formwork.grammar.json_schema.expand import KNOWN_KEYWORDS
from formwork.schemas.keywords import ANNOTATION_KEYWORDS
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.expand import Sub
    from formwork.grammar.json_schema.lowering import Lowerer

MAX_KEPT = 2048  # lowered sites kept (the least recently used dropped past it)
#: keys a `$ref` site holds none of (annotations and keys JSON Schema ignores change nothing)
_NOT_SITE_KEYS = KNOWN_KEYWORDS - ANNOTATION_KEYWORDS - {"$ref"}
#: bytes in a serialised closure that make resolution depend on more than the pointers (one
#: regex pass: four `in` scans of a Kubernetes definition's ~8 kB cost ~19 us, it ~3 us)
_SCOPED = re.compile(rb"\$(?:id|anchor|dynamic|recursive)")
#: keywords that make an inline subschema (no `$ref` inside) worth keeping by contents
_INLINE_WORTH = frozenset({"oneOf", "anyOf"})
#: keywords one of which a subschema that `RefLowerings.begin` may keep holds (a `$ref` site, or
#: an inline subschema worth keeping)
SITE_KEYWORDS = _INLINE_WORTH | {"$ref"}
#: serialised size past which an inline subschema holding `$ref`s is not kept (its sites are
#: found by a walk of its contents in Python; webpack's filter options are ~100 bytes)
MAX_INLINE_REF_BYTES = 4096


@dataclass(frozen=True, slots=True)
class KeptLowering:
    """A site's IR and what its lowering did to the lowerer's counters."""

    node: Node
    effects: "Effects"
    evictions: int  # eviction rounds of marks and lexemes before it was kept (`_evictions`)


@dataclass(frozen=True, slots=True)
class Recording:
    """What a lowering's start left in the lowerer's counters (`RefLowerings.record`)."""

    start: int  # frames open at its start
    outer_deepest: int
    first_rule: int
    calls: int
    changes: int  # `Lowerer.changes` at its start


@dataclass(frozen=True, slots=True)
class Effects:
    """What a lowering that depends on nothing else did to the lowerer's counters (`RefLowerings.recorded`)."""

    rule_ids: int  # rule numbers taken
    open_values: bool  # whether it asked for open values (`AnyValue.calls` grew)
    frames: int  # how many conjunction frames deeper than its start it nested


@dataclass(frozen=True, slots=True)
class _Site:
    """A site being lowered (`RefLowerings.begin`), or `kept` IR found for it."""

    key: tuple
    kept: Optional[Node]
    recording: Optional[Recording]


_KEPT: OrderedDict[tuple, KeptLowering] = OrderedDict()  # oldest use first
_LOCK = threading.Lock()


def clear() -> None:
    """Forget every kept lowering."""
    with _LOCK:
        _KEPT.clear()


class RefLowerings:
    """One lowering's access to the kept lowerings (its document's serialised targets, memoised).
    It holds no reference to the lowerer (which holds it): the lowerer is passed in."""

    def __init__(self, doc: Any, options: Any, indent: bool, max_frames: int) -> None:
        self._max_frames = max_frames  # a lowering nesting this many frames is refused
        self._indent = indent
        # None: nothing is kept (nor with unbounded open values: a site may use the any-JSON rule
        # another site of the lowering made)
        self._analysis = None if options.max_nesting_depth is None else getattr(doc, "analysis", None)
        self._context = (doc.draft.name, repr(options.whitespace), options.max_whitespace,
                         options.forbid_additional_properties, options.lenient,
                         options.max_nesting_depth)
        self._pickled: dict[Any, Optional[bytes]] = {}  # target Location -> bytes (None: unusable)
        #: rule frames open at the deepest point of the lowering so far (see `note_frames`)
        self.deepest = 0

    def note_frames(self, open_frames: int) -> None:
        """Record that a conjunction was lowered with `open_frames` frames open."""
        if open_frames > self.deepest:
            self.deepest = open_frames

    def record(self, lw: "Lowerer") -> Recording:
        """Start recording what a lowering starting now does to `lw`'s counters."""
        start = len(lw._frames)
        recording = Recording(start, self.deepest, lw.rules_taken, lw.any_value.calls, lw.changes)
        self.deepest = start
        return recording

    def recorded(self, lw: "Lowerer", recording: Recording) -> Optional[Effects]:
        """End `recording`: what the lowering did to the counters, or None when it changed more
        (a warning, a rule, a cycle...: it depends on more than its contents, and is not kept)."""
        deepest, self.deepest = self.deepest, max(recording.outer_deepest, self.deepest)
        if lw.changes != recording.changes:
            return None
        return Effects(lw.rules_taken - recording.first_rule, lw.any_value.calls != recording.calls,
                       deepest - recording.start)

    def replay(self, lw: "Lowerer", effects: Effects) -> bool:
        """Replay a kept lowering's `effects` on `lw`'s counters (its rule numbers: later rules may
        be numbered higher than afresh, with the same bodies); False, replaying nothing, where it
        would nest past the frame limit here (lower afresh, and be refused)."""
        start = len(lw._frames)
        if start + effects.frames >= self._max_frames:
            return False
        lw.rules_taken += effects.rule_ids
        if effects.open_values:
            lw.any_value.calls += 1
        self.note_frames(start + effects.frames)
        return True

    def begin(self, lw: "Lowerer", sub: "Sub", depth: int) -> Optional[_Site]:
        """Before `lw` lowers `sub` at `depth` (no Python frame between, so deep schemas nest as
        deep as without this): None when `sub` is no keepable `$ref` site; else a site whose
        `kept` is the kept IR to use, or, None, the lowering to pass to `end`."""
        key = self._key(sub, depth)
        if key is None:
            return None
        kept = _used(key)
        if kept is not None and self.replay(lw, kept.effects):
            return _Site(key, kept.node, None)
        return _Site(key, None, self.record(lw))

    def end(self, lw: "Lowerer", site: _Site, node: Node) -> None:
        """After `lw` lowered `site` to `node`: keep it if it depends on nothing else."""
        effects = self.recorded(lw, site.recording)
        if effects is None:
            return
        with _LOCK:
            _KEPT[site.key] = KeptLowering(node, effects, _evictions())
            _KEPT.move_to_end(site.key)
            if len(_KEPT) > MAX_KEPT:
                _KEPT.popitem(last=False)

    def _key(self, sub: "Sub", depth: int) -> Optional[tuple]:
        """The contents `sub`'s lowering reads, or None when it is not a plain `$ref` site of the
        root document or its closure is unusable (see the module docstring)."""
        analysis, schema = self._analysis, sub.schema
        if analysis is None or sub.exclude or type(schema) is not dict:
            return None
        if "$ref" not in schema or not _NOT_SITE_KEYS.isdisjoint(schema):
            return self._inline_key(schema, sub.pointer, depth)
        root_uri = analysis.root.uri
        site = analysis.sites.get(type(analysis.root)(root_uri, sub.pointer))
        if site is None or site.ref != schema["$ref"]:
            return None
        site_bytes = _pickled(schema["$ref"])  # its annotations change nothing (kinds word them apart)
        if site_bytes is None:
            return None
        if _scoped(site_bytes):
            return None
        closure = self._closure([site.target])
        if closure is None:
            return None
        return (self._context, depth if self._indent else 0, site_bytes, *closure)

    def _closure(self, targets: list[Any]) -> Optional[list[tuple[str, bytes]]]:
        """(pointer, serialised contents) of `targets` and every target reachable from them, in
        walk order; None when one is unusable (another document, `$id`, anchors...)."""
        analysis = self._analysis
        parts: list[tuple[str, bytes]] = []
        seen, stack = set(), targets[::-1]
        while stack:
            target = stack.pop()
            if target in seen:
                continue
            seen.add(target)
            pickled = self._target_bytes(target)
            if pickled is None:
                return None
            parts.append((target.pointer, pickled))
            stack.extend([analysis.sites[at].target for at, _ in reversed(analysis.target_sites[target])])
        return parts

    def _inline_key(self, schema: dict, pointer: str, depth: int) -> Optional[tuple]:
        """The key of a subschema with `oneOf`/`anyOf` (whose branches' overlaps make it costly):
        its contents but its annotations (and keys JSON Schema ignores), and when it holds `$ref`s (a small one of the root
        document below its root, `MAX_INLINE_REF_BYTES`), the closure of their targets.  Its lowering reads only
        those, wherever it sits: markdownlint's configuration repeats one `oneOf` of rule options
        under each rule's alias names, webpack's plugins `{"oneOf": [{"$ref": "#/definitions/Rules"}]}`
        under each filter option, described apart."""
        if _INLINE_WORTH.isdisjoint(schema):
            return None
        local = {key: value for key, value in schema.items()
                 if key in KNOWN_KEYWORDS and key not in ANNOTATION_KEYWORDS}
        pickled = _pickled(local)
        if pickled is None or _scoped(pickled):
            return None
        key = (self._context, depth if self._indent else 0, "inline", pickled)
        if b"$ref" not in pickled:
            return key
        # (not the root: a whole schema compiled again is the compiled-grammar cache's to find)
        if len(pickled) > MAX_INLINE_REF_BYTES or not pointer.startswith("/"):
            return None
        targets = self._inline_targets(local, pointer)
        closure = None if targets is None else self._closure(targets)
        return None if closure is None else (*key, *closure)

    def _inline_targets(self, local: dict, pointer: str) -> Optional[list[Any]]:
        """The targets of the `$ref`s in `local` (a subschema of the root document at `pointer`,
        annotations left out) in document order, as the analysis resolved them; None if a `$ref` key
        sits where the analysis found no such site (a property named `$ref`, data in an `enum`)."""
        analysis = self._analysis
        location = type(analysis.root)
        root_uri, sites = analysis.root.uri, analysis.sites
        targets: list[Any] = []
        stack: list[tuple[Any, str]] = [(local, pointer)]
        while stack:
            node, at = stack.pop()
            if isinstance(node, dict):
                if "$ref" in node:
                    site = sites.get(location(root_uri, at))
                    if site is None or site.ref != node["$ref"]:
                        return None
                    targets.append(site.target)
                items = [(value, child(at, key)) for key, value in node.items()
                         if isinstance(value, (dict, list))]
            else:
                items = [(value, child(at, index)) for index, value in enumerate(node)
                         if isinstance(value, (dict, list))]
            stack.extend(reversed(items))
        return targets

    def _target_bytes(self, target: Any) -> Optional[bytes]:
        got = self._pickled.get(target, b"")
        if got != b"":
            return got
        analysis = self._analysis
        pickled: Optional[bytes] = None
        if target.uri == analysis.root.uri and target in analysis.targets \
                and target in analysis.target_sites:
            pickled = _pickled(analysis.targets[target])
            if pickled is not None and _scoped(pickled):
                pickled = None
        self._pickled[target] = pickled
        return pickled


def _evictions() -> int:
    """Eviction rounds of shared marks and lexemes so far (both counts only grow)."""
    return shared_nodes.evictions() + lexemes.evictions()


def _used(key: tuple) -> Optional[KeptLowering]:
    """The live lowering kept for `key` (see `_live`), marked as used last; None if there is none."""
    with _LOCK:
        kept = _live(_KEPT.get(key))
        if kept is not None:
            _KEPT.move_to_end(key)
    return kept


def _live(kept: Optional[KeptLowering]) -> Optional[KeptLowering]:
    """`kept` while no shared mark or lexeme was evicted since it was kept; else None (lower
    afresh): one of its marks may be gone, and the IR would build that mark's member cells once
    per path, or walk a lexeme as plain IR (the same language, larger or slower)."""
    if kept is not None and kept.evictions != _evictions():
        return None
    return kept


def _scoped(pickled: bytes) -> bool:
    """Whether serialised contents name `$id`, an anchor or a dynamic/recursive reference."""
    return b"$" in pickled and _SCOPED.search(pickled) is not None


def _pickled(schema: Any) -> Optional[bytes]:
    """`schema` serialised, or None when it nests too deep for `pickle` (which recurses in C
    against Python's limit, and a lowering of such a schema is deep already)."""
    try:
        return pickle.dumps(schema, 5)
    except RecursionError:
        return None
