"""Objects that must hold some member of a kind: the complements of the member-wise keywords.

An object violates ``additionalProperties: X`` (beside ``properties`` naming D and
``patternProperties`` P) exactly when some member whose name is outside D and matches no pattern
of P has a value X rejects; it violates ``patternProperties: {p: Y}`` when some member whose
name matches p has a value Y rejects.  Such a "witness" member is a regular condition on the
member list as the grammar emits it (declared members in order, then the others): the walk of
`objects._MemberChain` with one more piece of state, the set of witnesses some member so far
stands for (`WitnessChain`).  Each member is split by the witnesses it stands for (its name in
the witness's domain or not, its value inside the keyword's schema or outside), so that every
object is read along one path: the automaton never tracks several sets of witnesses at once.
`violations` asks for them through a synthetic schema holding a `Witness` under the internal
keyword `expand.WITNESS`.
"""
from __future__ import annotations

from itertools import product
from typing import TYPE_CHECKING, NamedTuple, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import EMPTY, NOTHING, And, Node, Not, alt, repeat, seq
from formwork.grammar.json_schema.expand import Sub, plain_schema
from formwork.grammar.shared_nodes import share

if TYPE_CHECKING:
    from formwork.grammar.json_schema.objects import ObjectLowering, _MemberChain

#: Witnesses with a name pattern or a value condition that one member may stand for at once
#: (a member is split 2 or 3 ways per such witness).
MAX_CONDITIONAL = 4


class Witness(NamedTuple):
    """Some member whose name is none of `declared`, matches `matches` (a patternProperties
    regex; None: any name) and none of `avoids`, with a value outside `inside` (the keyword's
    schema); `value` is ``not: inside`` (None when `inside` is false: any value)."""

    declared: tuple[str, ...]
    matches: Optional[str]
    avoids: tuple[str, ...]
    inside: Sub
    value: Optional[Sub]
    pointer: str  # of the keyword it stands for (pattern errors name it)

    def plain(self) -> dict:
        """The same condition for `jsonschema`: not every such member's value is inside (a
        `matches` witness has no `declared` names nor `avoids`)."""
        inside = plain_schema(self.inside)
        if self.matches is not None:
            return {"not": {"patternProperties": {self.matches: inside}}}
        return {"not": {"properties": {n: True for n in self.declared},
                        "patternProperties": {p: True for p in self.avoids},
                        "additionalProperties": inside}}

    @property
    def conditional(self) -> bool:
        """Whether some undeclared member may still not stand for it."""
        return self.matches is not None or bool(self.avoids) or self.value is not None


class WitnessChain:
    """The member list of an object holding a member for each of `witnesses`: `plain`'s walk
    (its counts, its extra member) with the set of witnesses served so far (a bit mask), each
    cell (next member, count, mask) built once."""

    def __init__(self, ol: "ObjectLowering", witnesses: list[Witness], plain: "_MemberChain"):
        self.ol = ol
        self.witnesses = witnesses
        self.plain = plain
        self.full = (1 << len(witnesses)) - 1
        self.memo: dict[tuple, Node] = {}
        self.split: dict[tuple, list[tuple[int, Node]]] = {}
        self.declared: Optional[list[tuple[str, bool]]] = []
        for name in ol.names:
            if ol.declared_member(name) is None:
                if name in ol.required:
                    self.declared = None
                    break
                continue
            self.declared.append((name, name in ol.required))

    def body(self) -> Node:
        """The non-empty member list (NOTHING when none serves every witness)."""
        max_props = self.plain.max_props
        if self.declared is None or max_props is not None and max_props < 0:
            return NOTHING
        return self.rest(0, 0, True, 0)

    # ------------------------------------------------------------------ members, split
    def _serves(self, w: Witness, name: str) -> bool:
        """Whether the name of a member declared by the conjunction is in `w`'s domain."""
        matches = self.ol.lw.pattern_matches
        return name not in w.declared and (w.matches is None or matches(w.matches, w.pointer, name)) \
            and not any(matches(p, w.pointer, name) for p in w.avoids)

    def _variants(self, name: str, mask: int) -> list[tuple[int, Node]]:
        """The declared member `name` as (witnesses it serves, member), one per set of the
        witnesses outside `mask` whose domain holds `name`: its value outside their schemas
        exactly there."""
        applicable = [i for i, w in enumerate(self.witnesses)
                      if not mask >> i & 1 and self._serves(w, name)]
        free = sum(1 << i for i in applicable if self.witnesses[i].value is None)
        valued = tuple(i for i in applicable if self.witnesses[i].value is not None)
        key = (name, free, valued)
        if key not in self.split:
            self._check(len(valued), f"the member {name!r}")
            out = []
            for choice in product((True, False), repeat=len(valued)):
                ws = [(self.witnesses[i], served) for i, served in zip(valued, choice)]
                member = self.ol.declared_member(
                    name, [w.value if served else w.inside for w, served in ws])
                if member is not None:
                    out.append((free | sum(1 << i for i, c in zip(valued, choice) if c), member))
            self.split[key] = out
        return self.split[key]

    def _domain(self, w: Witness) -> Optional[Node]:
        """The undeclared names (canonical spellings) in `w`'s domain, or None for all."""
        lang = self.ol.lw.pattern_node
        langs = [lang(w.matches, "patternProperties", w.pointer, encoded=True)] \
            if w.matches is not None else []
        langs += [Not(lang(p, "patternProperties", w.pointer, encoded=True)) for p in w.avoids]
        if not langs:
            return None
        domain = langs[0]
        for more in langs[1:]:
            domain = And(domain, more)
        return domain

    def _classes(self, need: int) -> list[tuple[int, Node]]:
        """The undeclared member as (witnesses of `need` it serves, member), split so that each
        member is in one class: per conditional witness, its name outside the domain, or inside
        with the value inside the schema, or inside with the value outside (serving it)."""
        key = ("classes", need)
        if key in self.split:
            return self.split[key]
        free = sum(1 << i for i, w in enumerate(self.witnesses)
                   if need >> i & 1 and not w.conditional)
        conditional = [i for i, w in enumerate(self.witnesses) if need >> i & 1 and w.conditional]
        self._check(len(conditional), "an undeclared member")
        domains = [self._domain(self.witnesses[i]) for i in conditional]
        out = []
        for choice in product(("serves", "inside", "elsewhere"), repeat=len(conditional)):
            values: list[Sub] = []
            keys: list[Node] = []
            for i, domain, c in zip(conditional, domains, choice):
                if c == "elsewhere":
                    if domain is None:
                        break
                    keys.append(Not(domain))
                    continue
                w = self.witnesses[i]
                if w.value is None and c == "inside":
                    break
                if domain is not None:
                    keys.append(domain)
                if c == "inside":
                    values.append(w.inside)
                elif w.value is not None:
                    values.append(w.value)
            else:
                member = self.ol.extra_member(values, keys)
                if member is not None:
                    out.append((free | sum(1 << i for i, c in zip(conditional, choice)
                                           if c == "serves"), member))
        self.split[key] = out
        return out

    def _check(self, count: int, what: str) -> None:
        if count > MAX_CONDITIONAL:
            raise GrammarBudgetError(
                f"{what} of the object at {self.ol.parts[0].sub.pointer or '#'} may stand for "
                f"{count} conditional witnesses (complements of additionalProperties or "
                f"patternProperties; at most {MAX_CONDITIONAL})")

    # ------------------------------------------------------------------ the member list
    def rest(self, k: int, count: int, first: bool, mask: int) -> Node:
        """Declared members from index k on (as `_MemberChain.rest`), `mask` served so far."""
        key = (k, count, first, mask)
        if key in self.memo:
            return self.memo[key]
        assert self.declared is not None
        if k == len(self.declared):
            node = self.tail(count, first, mask)
        else:
            name, required = self.declared[k]
            after = count if required else min(count + 1, self.plain.cap)
            take = alt(*(seq(member, self.rest(k + 1, after, False, mask | bits))
                         for bits, member in self._variants(name, mask)))
            if not first:
                take = seq(self.plain.comma, take)
            node = take if required else alt(take, self.rest(k + 1, count, first, mask))
        node = self.memo[key] = share(node)
        return node

    def tail(self, count: int, first: bool, mask: int) -> Node:
        """Undeclared members only, `count` counted and `mask` served so far."""
        need = self.full & ~mask
        if not need:
            return self._served_tail(count, first)
        key = ("tail", count, first, mask)
        if key in self.memo:
            return self.memo[key]
        plain, comma = self.plain, self.plain.comma
        classes = self._classes(need) if plain.extra is not None else []
        hi = None if plain.max_props is None else plain.max_props - count
        if not any(b for b, _ in classes) or hi is not None and hi < 1:
            node = NOTHING
        elif hi is not None or count < plain.cap:  # the count still matters: one member a step
            nxt = min(count + 1, plain.cap)
            node = alt(*(seq(m, self.tail(nxt, False, mask | b)) for b, m in classes))
            if not first:
                node = seq(comma, node)
        else:  # any number of members serving no one, then one that serves some
            idle = [m for b, m in classes if not b]
            lead = EMPTY if not idle else repeat(seq(alt(*idle), comma), 0, None) if first \
                else repeat(seq(comma, alt(*idle)), 0, None)
            node = alt(*(seq(m, self.tail(count, False, mask | b)) for b, m in classes if b))
            node = seq(lead, node) if first else seq(lead, comma, node)
        node = self.memo[key] = share(node)
        return node

    def _served_tail(self, count: int, first: bool) -> Node:
        """Undeclared members once every witness is served: within the counts alone."""
        plain = self.plain
        lo = max(0, plain.min_props - count, 1 if first else 0)
        hi = None if plain.max_props is None else plain.max_props - count
        if hi is not None and hi < lo or plain.extra is None and lo:
            return NOTHING
        if plain.extra is None:
            return EMPTY
        more = repeat(seq(plain.comma, plain.extra), max(lo - 1, 0) if first else lo,
                      None if hi is None else hi - 1 if first else hi)
        return seq(plain.extra, more) if first else more

