"""Lookarounds as intersections and complements of regular languages.

The regex parser builds grammar IR directly; a part of a pattern that holds a lookaround is kept
instead as a small tree (`Look`, `LSeq`, `LAlt`, `LRep` over IR leaves) until the whole branch is
read, because an assertion constrains the rest (or the start) of the *whole string*, past the
group it sits in.  `resolve` then turns the branch into IR by continuations:

* lookaheads, right to left: with K the language of what follows a position (the rest of the
  branch, then the text after the match), ``(?=X)`` there is ``K & X.*`` and ``(?!X)`` is
  ``K & ~(X.*)``;
* lookbehinds, left to right: with P the language of what precedes, ``(?<=Y)`` is ``P & .*Y`` and
  ``(?<!Y)`` is ``P & ~(.*Y)`` (any width: the language needs no fixed width);
* a branch with both is split where every lookbehind is to the left of every lookahead; a
  lookahead first in a branch anchored with ``^`` (or a lookbehind last in one anchored with
  ``$``) sees the whole string, and is an intersection with all of it.

A ``$`` (``^``) away from the ends of a top-level branch is the lookahead ``(?![^])`` (lookbehind
``(?<![^])``): with nothing allowed to follow (precede), it cuts the continuation to its empty
string, so ``(?=X$)`` is ``K & X`` with no ``.*`` after X, and ``a$b`` matches nothing.

An unbounded repetition of one character guarded by lookaheads that runs to the end of a
``$``-anchored branch (``^(?:(?!ab).)*$``) is the characters with no failing position
(``c* & ~(.* ((.+) & ~Y))``), and its mirror with lookbehinds from a leading ``^``.

Left out (`UnsupportedRegexError`, with the reason): other lookarounds inside an unbounded
repetition (``(?:(?!ab).)*b``: where the repetition ends is not fixed, so its assertions would
repeat at positions no continuation names), a repetition of more than `MAX_UNROLL` copies around
one, and a lookahead before a lookbehind in the same sequence otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from formwork.grammar.ir import (EMPTY, NOTHING, Alt, And, ByteSet, Bytes, Empty, Node, Not, Nothing, Repeat,
                                 Seq, alt, repeat, seq)
from formwork.grammar.ir_chars import any_char, any_text

MAX_UNROLL = 8


@dataclass(frozen=True)
class Look:
    """A lookaround assertion over `body`."""

    ahead: bool
    negate: bool
    body: "Part"


@dataclass(frozen=True)
class LSeq:
    items: tuple["Part", ...]


@dataclass(frozen=True)
class LAlt:
    items: tuple["Part", ...]


@dataclass(frozen=True)
class LRep:
    item: "Part"
    lo: int
    hi: int | None


Tree = Union[Look, LSeq, LAlt, LRep]
Part = Union[Node, Tree]

#: ``$`` and ``^`` away from the ends of a top-level branch (ECMAScript without the `m` flag): no
#: character follows (precedes) the position, ``(?![^])`` and ``(?<![^])``.
END_OF_INPUT = Look(ahead=True, negate=True, body=any_char())
START_OF_INPUT = Look(ahead=False, negate=True, body=any_char())


def _is_tree(part: Part) -> bool:
    return isinstance(part, (Look, LSeq, LAlt, LRep))


def make_seq(*items: Part) -> Part:
    """`seq`, or an `LSeq` when an item holds a lookaround."""
    if not any(map(_is_tree, items)):
        return seq(*items)
    return items[0] if len(items) == 1 else LSeq(tuple(items))


def make_alt(*items: Part) -> Part:
    """`alt`, or an `LAlt` when an item holds a lookaround."""
    if not any(map(_is_tree, items)):
        return alt(*items)
    return items[0] if len(items) == 1 else LAlt(tuple(items))


def make_repeat(item: Part, lo: int, hi: int | None) -> Part:
    """`repeat`, or an `LRep` around a lookaround."""
    return LRep(item, lo, hi) if _is_tree(item) else repeat(item, lo, hi)


def _kinds(part: Part) -> set[bool]:
    """Which directions of lookaround `part` holds (True: ahead, False: behind)."""
    if isinstance(part, Look):
        return {part.ahead}
    if isinstance(part, (LSeq, LAlt)):
        return set().union(*map(_kinds, part.items))
    if isinstance(part, LRep):
        return _kinds(part.item)
    return set()


def resolve(part: Part, before: Node, after: Node, fail: Callable[[str], Exception]) -> Node:
    """The strings ``p m a`` with p in `before`, m a match of `part` and a in `after`, every
    assertion holding on the whole string.  `fail(reason)` makes the error for what cannot be."""
    if isinstance(part, Node):
        return seq(before, part, after)
    kinds = _kinds(part)
    if True not in kinds:
        return seq(_left(part, before, fail), after)
    if False not in kinds:
        return seq(before, _right(part, after, fail))
    items = part.items if isinstance(part, LSeq) else (part,)
    first, last = items[0], items[-1]
    if before is EMPTY and isinstance(first, Look) and first.ahead:  # it sees the whole string
        return _assert(resolve(LSeq(items[1:]), before, after, fail), first, fail)
    if after is EMPTY and isinstance(last, Look) and not last.ahead:
        return _assert(resolve(LSeq(items[:-1]), before, after, fail), last, fail)
    for split in range(len(items) + 1):
        if True not in _kinds(LSeq(items[:split])) and False not in _kinds(LSeq(items[split:])):
            return seq(_left(LSeq(items[:split]), before, fail), _right(LSeq(items[split:]), after, fail))
    raise fail("a lookahead before a lookbehind in one sequence is not supported")


def _assert(language: Node, look: Look, fail: Callable[[str], Exception]) -> Node:
    """`language` where `look` holds at its very start (ahead) or very end (behind)."""
    seen = _right(look.body, any_text(), fail) if look.ahead else _left(look.body, any_text(), fail)
    return And(language, Not(seen) if look.negate else seen)


def _nullable(node: Node) -> bool | None:
    """Whether `node` matches the empty string; None for a node kind this does not read."""
    if isinstance(node, Empty):
        return True
    if isinstance(node, Bytes):
        return not node.value
    if isinstance(node, (ByteSet, Nothing)):
        return False
    if isinstance(node, Repeat):
        return True if node.min == 0 else _nullable(node.item)
    if isinstance(node, (Seq, Alt, And)):
        parts = [_nullable(x) for x in ((node.a, node.b) if isinstance(node, And) else node.items)]
        if None in parts:
            return None
        return any(parts) if isinstance(node, Alt) else all(parts)
    if isinstance(node, Not):
        inner = _nullable(node.a)
        return None if inner is None else not inner
    return None


def _at_an_end(language: Node, look: Look) -> Node | None:
    """`language` cut to its empty string when `look` is `END_OF_INPUT` / `START_OF_INPUT` (what
    must follow / precede such a position is nothing at all); None for other assertions."""
    if look is not END_OF_INPUT and look is not START_OF_INPUT:
        return None
    nullable = _nullable(language)
    if nullable is None:
        return None
    return EMPTY if nullable else NOTHING


def _one_char(node: Part) -> bool:
    """Whether `node` (as the regex parser builds it) matches exactly one character."""
    if isinstance(node, ByteSet):
        return all(hi < 0x80 for _, hi in node.ranges)
    if isinstance(node, Bytes):
        try:
            return len(node.value.decode("utf-8")) == 1
        except UnicodeDecodeError:
            return False
    if isinstance(node, Alt):
        return all(map(_one_char, node.items))
    if isinstance(node, Seq):  # a multi-byte character: a lead byte, then continuation bytes
        first, *others = node.items
        return isinstance(first, ByteSet) and all(0xC2 <= lo and hi <= 0xF4 for lo, hi in first.ranges) \
            and all(isinstance(b, ByteSet) and all(0x80 <= lo and hi <= 0xBF for lo, hi in b.ranges)
                    for b in others) and len(others) == _utf8_tail(first.ranges[0][0])
    return False


def _utf8_tail(lead: int) -> int:
    return 1 if lead < 0xE0 else 2 if lead < 0xF0 else 3


def _tempered(rep: LRep, ahead: bool, fail: Callable[[str], Exception]) -> Node | None:
    """A ``$`` (``^``) away from the ends of a top-level branch is the lookahead ``(?![^])`` (lookbehind
``(?<![^])``): with nothing allowed to follow (precede), it cuts the continuation to its empty
string, so ``(?=X$)`` is ``K & X`` with no ``.*`` after X, and ``a$b`` matches nothing.

An unbounded repetition of one character guarded by lookarounds of one direction
    (``(?:(?!X).)*`` reaching the end of a ``$``-anchored branch, or ``(?:.(?<!X))*`` from the
    start of a ``^``-anchored one): the assertions hold at every character position of the
    repetition, which is then the whole rest (or start) of the string; None for other shapes."""
    items = rep.item.items if isinstance(rep.item, LSeq) else (rep.item,)
    looks, char = (items[:-1], items[-1]) if ahead else (items[1:], items[0])
    if not looks or not _one_char(char) or \
            not all(isinstance(x, Look) and x.ahead == ahead for x in looks):
        return None
    failing = alt(*(_assert(any_text(), Look(x.ahead, not x.negate, x.body), fail) for x in looks))
    at_a_char = And(repeat(any_char(), 1, None), failing)  # a position before (after) a character
    where = seq(any_text(), at_a_char) if ahead else seq(at_a_char, any_text())
    return And(repeat(char, rep.lo, None), Not(where))


def _unrolled(rep: LRep, fail: Callable[[str], Exception]) -> list[tuple[Part, bool]]:
    """The copies of a repetition around a lookaround: (item, optional) pairs."""
    if rep.hi is None:
        raise fail("a lookaround inside an unbounded repetition (*, +, {n,}) is not supported "
                   "(only one character guarded by lookaheads up to a final $, or by lookbehinds "
                   "from a leading ^)")
    if rep.hi > MAX_UNROLL:
        raise fail(f"a lookaround inside a repetition of more than {MAX_UNROLL} copies is not supported")
    return [(rep.item, False)] * rep.lo + [(rep.item, True)] * (rep.hi - rep.lo)


def _right(part: Part, rest: Node, fail: Callable[[str], Exception]) -> Node:
    """`part` followed by `rest`, its lookaheads checked against everything after them."""
    if isinstance(part, Node):
        return seq(part, rest)
    if isinstance(part, LSeq):
        for item in reversed(part.items):
            rest = _right(item, rest, fail)
        return rest
    if isinstance(part, LAlt):
        return alt(*(_right(item, rest, fail) for item in part.items))
    if isinstance(part, LRep):
        if part.hi is None and rest is EMPTY:
            tempered = _tempered(part, ahead=True, fail=fail)
            if tempered is not None:
                return tempered
        for item, optional in reversed(_unrolled(part, fail)):
            rest = alt(rest, _right(item, rest, fail)) if optional else _right(item, rest, fail)
        return rest
    if not part.ahead:
        if part is START_OF_INPUT:
            raise fail("'^' inside a lookahead, or after one in a sequence, is not supported")
        raise fail("a lookahead before a lookbehind in one sequence is not supported")
    at_end = _at_an_end(rest, part)
    if at_end is not None:
        return at_end
    ahead = _right(part.body, any_text(), fail)
    return And(rest, Not(ahead) if part.negate else ahead)


def _left(part: Part, start: Node, fail: Callable[[str], Exception]) -> Node:
    """`start` followed by `part`, its lookbehinds checked against everything before them."""
    if isinstance(part, Node):
        return seq(start, part)
    if isinstance(part, LSeq):
        for item in part.items:
            start = _left(item, start, fail)
        return start
    if isinstance(part, LAlt):
        return alt(*(_left(item, start, fail) for item in part.items))
    if isinstance(part, LRep):
        if part.hi is None and start is EMPTY:
            tempered = _tempered(part, ahead=False, fail=fail)
            if tempered is not None:
                return tempered
        for item, optional in _unrolled(part, fail):
            start = alt(start, _left(item, start, fail)) if optional else _left(item, start, fail)
        return start
    if part.ahead:
        if part is END_OF_INPUT:
            raise fail("'$' inside a lookbehind, or before one in a sequence, is not supported")
        raise fail("a lookahead before a lookbehind in one sequence is not supported")
    at_start = _at_an_end(start, part)
    if at_start is not None:
        return at_start
    behind = _left(part.body, any_text(), fail)
    return And(start, Not(behind) if part.negate else behind)
