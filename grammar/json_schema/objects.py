"""Objects: merge the object keywords of a conjunction of subschemas and lower them to IR.

Members are emitted in a fixed order: the declared properties (``properties`` in schema order,
then ``required`` names not declared there), each optional unless required, then any number of
extra members.  Extra keys never spell a declared name; their values obey every matching
``patternProperties`` schema, else ``additionalProperties``.  ``minProperties``/``maxProperties``
count all members; ``propertyNames`` narrows every key (`property_names`).  Keys are canonical
JSON strings.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import EMPTY, NOTHING, And, Node, Not, Nothing, alt, lit, repeat, seq
from formwork.grammar.ir_untrack import untracked_ir
from formwork.grammar.json_schema.expand import WITNESS, Sub
from formwork.grammar.json_schema.property_names import PropertyNames
from formwork.grammar.json_schema.strings import (
    QUOTE, canonical_content_except, literal_content, string_content,
)
from formwork.grammar.json_schema.unevaluated import plain_unevaluated
from formwork.grammar.json_schema.values import container
from formwork.grammar.json_schema.witnesses import Witness, WitnessChain
from formwork.grammar.shared_nodes import renew, share, share_member_cells

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer

MAX_PATTERNS = 4
MAX_SHARED_TAKES = 100  # see `_MemberChain.share_takes`
MAX_CHAINS = 4096  # member lists kept by `_MemberChain.body` (all dropped when full)
# (members, id of the extra member's mark, id of the comma, counts) -> (the member list's node,
# the extra mark and comma (kept: their ids are in the key), the marks it is made of)
_CHAINS: dict[tuple, tuple[Node, tuple, tuple[Node, ...]]] = {}


@dataclass(slots=True)
class ObjectPart:
    """The object keywords of one subschema."""

    sub: Sub
    props: dict[str, Sub] = field(default_factory=dict)
    patterns: list[tuple[str, Sub]] = field(default_factory=list)
    additional: Optional[Sub] = None
    names: Optional[Sub] = None  # propertyNames
    required: list[str] = field(default_factory=list)
    min_props: int = 0
    max_props: Optional[int] = None
    witness: Optional[Witness] = None  # some member of a kind it must hold (`witnesses`)


def object_part(lw: "Lowerer", sub: Sub) -> ObjectPart:
    s = sub.schema
    members = lw.expander.members
    part = ObjectPart(sub, dict(members(sub, "properties")) if "properties" in s else {},
                      members(sub, "patternProperties") if "patternProperties" in s else [])
    if "additionalProperties" in s:
        part.additional = lw.expander.child(sub, "additionalProperties")
    elif "unevaluatedProperties" in s and plain_unevaluated(s, "unevaluatedProperties"):
        part.additional = lw.expander.child(sub, "unevaluatedProperties")
    elif lw.options.forbid_additional_properties and (part.props or part.patterns):
        part.additional = Sub(False, sub.resolver, sub.pointer)
    if "propertyNames" in s:
        part.names = lw.expander.child(sub, "propertyNames")
    if "required" in s:
        part.required = list(s["required"])
    if "minProperties" in s:
        part.min_props = int(s["minProperties"])
    if "maxProperties" in s:
        part.max_props = int(s["maxProperties"])
    if WITNESS in s:
        part.witness = s[WITNESS]
    return part


def _some_false(subs: list[Sub]) -> bool:
    """Whether a subschema in `subs` is `false`."""
    for s in subs:
        if s.schema is False:
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _key_prefix(name: str, colon: Node) -> Node:
    """A declared member up to its value: the quoted name and the colon (names recur across
    schemas)."""
    return untracked_ir(seq(QUOTE, literal_content(name), QUOTE, colon))


@functools.lru_cache(maxsize=4096)
def _member_node(name: str, colon: Node, value: Node) -> Node:
    """A declared member, one object per equal (name, value) across compiles: the member lists
    made of it (their memo `_CHAINS`, their cells' marks) then find equal members by identity, not
    by comparing a fresh copy node by node."""
    return untracked_ir(seq(_key_prefix(name, colon), value))


class ObjectLowering:
    """Lowers the merged object keywords of one alternative at one nesting depth."""

    def __init__(self, lw: "Lowerer", subs: list[Sub], depth: int):
        self.lw = lw
        self.ws = lw.ws
        self.depth = depth
        parts = self.parts = [object_part(lw, s) for s in subs if isinstance(s.schema, dict)]
        if len(parts) == 1:  # the usual object: one subschema's keywords, merged as below
            part = parts[0]
            self.min_props, self.max_props = part.min_props, part.max_props
            names = dict.fromkeys(part.props)
            if part.required:
                names.update(dict.fromkeys(part.required))
            self.witnesses = [] if part.witness is None else [part.witness]
            self.required = set(part.required)
            name_subs = [part.names] if part.names else []
        else:
            self.min_props = max([p.min_props for p in parts], default=0)
            maxes = [p.max_props for p in parts if p.max_props is not None]
            self.max_props = min(maxes) if maxes else None
            names = {}
            for p in parts:
                names.update(dict.fromkeys(p.props))
            for p in parts:
                names.update(dict.fromkeys(p.required))
            self.witnesses = [p.witness for p in parts if p.witness is not None]
            self.required = {n for p in parts for n in p.required}
            name_subs = [p.names for p in parts if p.names]
        for w in self.witnesses:  # declared for the witness: undeclared members serve it
            names.update(dict.fromkeys(w.declared))
        self.names = list(names)
        self.property_names = PropertyNames(lw, name_subs, depth + 1)

    # ------------------------------------------------------------------ member languages
    def _matching(self, part: ObjectPart, name: str) -> list[Sub]:
        return [s for pattern, s in part.patterns if self.lw.pattern_matches(pattern, s.pointer, name)]

    def value_subs(self, name: str) -> list[Sub]:
        """Every subschema the value of member `name` must satisfy."""
        out: list[Sub] = []
        for part in self.parts:
            matched = self._matching(part, name) if part.patterns else ()
            out.extend(matched)
            if name in part.props:
                out.append(part.props[name])
            elif not matched and part.additional is not None:
                out.append(part.additional)
        return out

    def _member(self, key: Node, value: Node) -> Node:
        return seq(self.property_names.restrict(seq(QUOTE, key, QUOTE)), self.ws.colon(), value)

    def declared_members(self) -> Optional[list[tuple[Node, bool]]]:
        """(member, required) per declared name; None when a required member is impossible."""
        members = []
        if self.property_names.subs or len(self.parts) != 1 or self.parts[0].patterns:
            for name in self.names:
                required = name in self.required
                member = self.declared_member(name)
                if member is None:
                    if required:
                        return None
                    continue
                members.append((member, required))
            return members
        # the usual object (one subschema, no patternProperties or propertyNames):
        # `declared_member` of each name, its value subschema the property's, else the
        # additional one (`value_subs`), without a call a name for those steps
        part = self.parts[0]
        props, additional, required_names = part.props, part.additional, self.required
        lower_subs, depth, colon = self.lw.lower_subs, self.depth + 1, self.ws.colon()
        for name in self.names:
            sub = props[name] if name in props else additional
            value = lower_subs([] if sub is None else [sub], depth)
            if type(value) is Nothing:
                if name in required_names:
                    return None
                continue
            members.append((_member_node(name, colon, value), name in required_names))
        return members

    def declared_member(self, name: str, extra: Sequence[Sub] = ()) -> Optional[Node]:
        """The member `name` with a value satisfying `extra` too, or None when there is none."""
        names = self.property_names
        if names.subs and not names.allows(name):  # (no propertyNames: every name is allowed)
            return None
        subs = self.value_subs(name)  # a new list
        if extra:
            subs.extend(extra)
        value = self.lw.lower_subs(subs, self.depth + 1)
        return None if isinstance(value, Nothing) else _member_node(name, self.ws.colon(), value)

    def extra_member(self, extra: Sequence[Sub] = (), keys: Sequence[Node] = ()) -> Optional[Node]:
        """Any member whose key is not declared (and in every language of `keys`), its value
        satisfying `extra` too, or None when there can be none."""
        if isinstance(self.property_names.keys, Nothing):
            return None
        # each distinct pattern once (a key matches it or not, whichever parts name it)
        patterns: dict[str, Sub] = {}
        for part in self.parts:
            for pattern, s in part.patterns:
                patterns.setdefault(pattern, s)
        if len(patterns) > MAX_PATTERNS:
            raise GrammarBudgetError(
                f"more than {MAX_PATTERNS} patternProperties apply to the object at "
                f"{self.parts[0].sub.pointer or '#'}")
        # (no patterns, the usual object: one mask, each step below without a call)
        langs = [self.lw.pattern_node(pattern, "patternProperties", s.pointer, encoded=True)
                 for pattern, s in patterns.items()] if patterns else []
        bits = {pattern: bit for bit, pattern in enumerate(patterns)} if patterns else {}
        any_key: Optional[Node] = None  # made at the first member possible (often none is)
        options = []
        for mask in range(1 << len(patterns)):
            values: list[Sub] = list(extra)
            for part in self.parts:
                matched = [s for pattern, s in part.patterns if mask >> bits[pattern] & 1] \
                    if part.patterns else None
                if matched:
                    values.extend(matched)
                elif part.additional is not None:
                    values.append(part.additional)
            if _some_false(values):
                continue
            value = self.lw.lower_subs(values, self.depth + 1)
            if type(value) is Nothing:
                continue
            if any_key is None:
                any_key = self._undeclared_key(keys)
            key = any_key
            for bit, lang in enumerate(langs):
                key = And(key, lang) if mask >> bit & 1 else And(key, Not(lang))
            options.append(self._member(key, value))
        return alt(*options) if options else None

    def _undeclared_key(self, keys: Sequence[Node]) -> Node:
        """The contents of a key no declared name spells, in every language of `keys`."""
        any_key = canonical_content_except(self.names) if self.names else string_content(canonical=True)
        for lang in keys:
            any_key = And(any_key, lang)
        return any_key

    # ------------------------------------------------------------------ the member list
    def lower(self) -> Node:
        members = self.declared_members()
        if members is None:
            return NOTHING
        chain = _MemberChain(members, self.extra_member(), self.ws.comma(self.depth),
                             self.min_props, self.max_props)
        body = WitnessChain(self, self.witnesses, chain).body() if self.witnesses else chain.body()
        may_be_empty = not self.required and self.min_props == 0 and not self.witnesses
        if isinstance(body, Nothing):
            return lit("{}") if may_be_empty else NOTHING
        # shared: equal objects that end alike (one value under several patternProperties, say)
        # are built once
        return share(container(self.ws, self.depth, "{", "}", body, may_be_empty))


class _MemberChain:
    """The members inside an object's braces: the declared `members` in order, each optional
    unless required, then any number of `extra` members (None: none allowed), their count within
    min/maxProperties.  Required members are always there, so only the others are counted, and
    only up to `cap` (past it, more members change nothing).  A cell (next member, count so far)
    is reached by many paths: each is built once (`share`), so the automaton grows with members
    x cap, not with the paths.  Every cell ends where the member list ends, so a shared node
    used by several cells is built once: a member with what follows it (`take`) serves the cell
    where it comes first and the one where a comma precedes it, and the extra members from one
    on (`extras`) serve both the same way, their catch-all member built once inside (`e (, e)*`
    ends both e at one state).  A class rather than recursive closures, which are reference
    cycles left for the garbage collector."""

    def __init__(self, members: list[tuple[Node, bool]], extra: Optional[Node], comma: Node,
                 min_props: int, max_props: Optional[int]):
        self.members = members
        self.marks: list[Node] = []  # every mark made or found for this list (`_share`)
        self.extra = None if extra is None else self._share(extra)
        self.comma = comma
        fixed = sum([required for _, required in members])
        self.min_props = max(0, min_props - fixed)  # of the optional and extra members
        self.max_props = None if max_props is None else max_props - fixed
        self.cap = (self.max_props + 1) if self.max_props is not None else self.min_props
        self.memo: dict[tuple[int, int, bool], Node] = {}
        # a shared `take` nests the list one mark deeper a member: past MAX_SHARED_TAKES members
        # only containers' are shared (scalars are built in both rows), so that the NFA builder's
        # recursion builds more members within its depth limit (set when that was Python's: with
        # every take shared, 200 passed it; now the builder's own 5,000 levels: 1,000 scalar
        # members build, 2,000 are refused as too deep)
        self.share_takes = len(members) <= MAX_SHARED_TAKES

    def body(self) -> Node:
        """The non-empty member list (NOTHING when the counts allow none).  A list made before
        from equal members, the same extra mark and comma and the same counts is the same node,
        made of the same marks: while those are all live (`renew`), it is taken again, without
        looking each cell up again (a schema compiled again, or objects alike in one)."""
        if self.max_props is not None and self.max_props < 0:
            return NOTHING
        key = (tuple(self.members), id(self.extra), id(self.comma), self.min_props, self.max_props)
        got = _CHAINS.get(key)
        if got is not None and renew(got[2]):
            return got[0]
        body = self.rest(0, 0, True)
        if len(_CHAINS) >= MAX_CHAINS:
            _CHAINS.clear()
        # untracked (immutable IR and tuples): kept for the process's life, nothing for a full collection to scan
        _CHAINS[untracked_ir(key)] = untracked_ir((body, (self.extra, self.comma), tuple(self.marks)))
        return body

    def _share(self, node: Node) -> Node:
        """`share(node)`, the mark kept in `marks`."""
        marked = share(node)
        if marked is not node:
            self.marks.append(marked)
        return marked

    def rest(self, k: int, count: int, first: bool) -> Node:
        """Members from declared index k on, `count` counted so far; `first`: none yet and at
        least one must follow.  Each cell (k, count, first) after the cells it leads to (taking
        member k, skipping it), kept in `memo`: the member with what follows it (`take`, shared
        as the class docstring says), after a comma unless first, or the skipped cell's list,
        shared; at k == end the extra members (`_end_cell`).  The loop is C's
        (`share_member_cells`: no Python frame a cell, an explicit stack: ~1,000 members deep)."""
        return share_member_cells((k, count, first), self.members, self.memo, self.marks, self.comma,
                                  self.cap, self.share_takes, self._end_cell)

    def _end_cell(self, count: int, first: bool) -> Node:
        """The cell past the declared members: extra members only."""
        return self._share(self.extras(count) if first else self.tail(count))

    def _bounds(self, count: int) -> tuple[int, Optional[int]]:
        """How many more extra members there may be, `count` counted so far."""
        return max(0, self.min_props - count), None if self.max_props is None else self.max_props - count

    def extras(self, count: int) -> Node:
        """At least one extra member, and more within the counts (`count` counted so far)."""
        lo, hi = self._bounds(count)
        lo = max(lo, 1)
        extra = self.extra
        if extra is None or (hi is not None and hi < lo):
            return NOTHING
        return self._share(seq(extra, repeat(seq(self.comma, extra), lo - 1, None if hi is None else hi - 1)))

    def tail(self, count: int) -> Node:
        """After a member: the extra members, each after a comma (`count` counted so far)."""
        lo, hi = self._bounds(count)
        if hi is not None and hi < lo:
            return NOTHING
        more = seq(self.comma, self.extras(count))
        return more if lo > 0 else alt(EMPTY, more)
