"""Lexemes: sub-languages whose token masks every grammar shares (string contents, numbers, formats).

A regular grammar compiles to one document automaton, so a state inside, say, a string's contents
would get a token mask of its own in every grammar, computed by walking the whole vocabulary
through the document.  The NFA records where each lexeme was built (a `Region`): an embedded DFA
(`And`/`Not` sub-terms, frozen pieces such as numbers and formats) or an IR node marked with
`lexeme()` (string contents, whose bounded forms are too big to build eagerly).  A document state
whose NFA states all lie inside one region *is* a state of the lexeme's own automaton, and its
mask is the union of
- the tokens that stay inside the lexeme: the lexeme automaton's own mask, cached per lexeme
  state by `TokenMaskCache` and so shared by every grammar that uses the lexeme; and
- the tokens that finish the lexeme part way and go on after it: from the trie nodes where the
  lexeme may end and the next byte is one the document allows after it (`exit_seeds_after`, also
  shared), only their subtrees are walked, from the document state after that byte.
A bounded repetition (a string's contents under maxLength) goes one step further: every place
with as many repetitions left is one state of a shared automaton, whatever the bounds
(`Region.counted_state`); before the minimum, only for the tokens that stay inside.  Its region
counts over its item's NFA (`Region.counted`): its NFA states are numbers, made by arithmetic
when first reached, so neither compile time nor memory grows with the bound.  This is the
lexer/parser split of DESIGN.md applied to regular grammars.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from formwork.grammar.dfa import DFA
from formwork.grammar.ir import Alt, Empty, Node, Nothing, Repeat, Seq

class StandaloneAutomaton(Protocol):
    """What a region needs of a lexeme's own automaton (a `LazyDFA`): its states by NFA-state set."""

    nfa: Any

    def closure(self, states: Any) -> frozenset[int]: ...

    def state_of(self, states: frozenset[int]) -> int: ...


_MAX_LEXEMES = 4096
_LEXEMES: OrderedDict[Node, bool] = OrderedDict()  # lexeme -> whether it is open-ended (below)
_LEXEMES_LOCK = threading.Lock()
_TWINS: dict[Node, Node] = {}  # lexeme -> its boundary twin (see `lexeme`; dropped with its lexeme)
_evictions = 0  # eviction rounds so far (see `evictions`)
_PINNED: set[Node] = set()  # lexemes made once (module constants): never evicted, nothing would mark them again


def lexeme(node: Node, open_ended: bool = False, twin: Node | None = None, pinned: bool = False) -> Node:
    """Mark `node` as a lexeme (its language is unchanged) and return it.  Only nodes that
    concatenation and union keep whole can be found again: a repetition, not a sequence.

    `open_ended` promises that after any prefix of the lexeme, every string of JSON string
    characters can follow (e.g. string contents, or object keys other than the declared names):
    a document state inside it then admits the whole string-character token slice.

    `twin` (a lexeme) promises more: both are languages of one alphabet of characters in which
    any string of characters can follow any prefix that ends between two characters, so every
    state of this lexeme whose next bytes are the twin start's (a state between two characters:
    mid-character states allow only a character's rest) keeps the same tokens inside as the
    twin's start, whose mask every schema shares (`TokenMaskCache.lexeme_base`).

    The table keeps the lexemes used last (`_MAX_LEXEMES`); a lowering marks its lexemes as it
    builds them, so an evicted one is marked again when next built.  A lexeme built once (a module
    constant) is `pinned`: it is never evicted."""
    if isinstance(node, (Seq, Alt)):
        raise TypeError("a lexeme must be a node that seq()/alt() do not flatten (e.g. a Repeat)")
    if isinstance(node, (Empty, Nothing)):  # (string contents of length 0) equal to every Empty:
        return node  # marked, each one in every IR would read as a lexeme
    with _LEXEMES_LOCK:
        if pinned:
            _PINNED.add(node)
        _LEXEMES[node] = open_ended
        _LEXEMES.move_to_end(node)
        if len(_LEXEMES) - len(_PINNED) > _MAX_LEXEMES:  # pinned ones are not counted
            _evict_oldest_quarter()
        if twin is not None:
            _TWINS[node] = twin
    return node


def _evict_oldest_quarter() -> None:
    """Drop the lexemes used longest ago, a quarter of the table (pinned ones aside) at once: one
    eviction round, so IR kept across compiles (`ref_lowerings`) is given up once a round, not
    at each new lexeme of a full table (the lock held)."""
    global _evictions
    keep = _MAX_LEXEMES - max(1, _MAX_LEXEMES // 4)
    while len(_LEXEMES) - len(_PINNED) > keep:
        oldest, oldest_open = _LEXEMES.popitem(last=False)
        if oldest in _PINNED:
            _LEXEMES[oldest] = oldest_open  # kept, as the newest
            continue
        _TWINS.pop(oldest, None)
    _evictions += 1


def evictions() -> int:
    """How many eviction rounds there were so far: IR kept across compiles is marked as when it
    was built while this count is what it was then."""
    return _evictions


def boundary_twin(node: Node) -> Node | None:
    """The `twin` that `lexeme` was given for `node`, if any."""
    return _TWINS.get(node)


def is_lexeme(node: Node) -> bool:
    return node in _LEXEMES


def is_open_ended(node: Node) -> bool:
    return bool(_LEXEMES.get(node))


def lexeme_marks() -> "OrderedDict[Node, bool]":
    """The live table of marks (lexeme -> open-ended) that the NFA builder (in C) reads; do not
    modify it but through `lexeme`."""
    return _LEXEMES


@dataclass(frozen=True, init=False)
class Region:
    """NFA states `first..last-1` spell one lexeme; `end` is the NFA state right after it.

    Either `dfa` (an embedded DFA whose state q is NFA state `first - 1 + q`) or `node` (a lexeme
    spliced from `template`, the NFA of its standalone automaton, which numbers NFA state x as
    `x - first + 2`, `start` as 0 and `end` as 1).  A `counted` lexeme is a bounded repetition
    `item{lo,hi}` whose template is its item's NFA (`width` + 1 states): NFA state
    `first + j * width` is the place after j repetitions and `first + j * width + o` (0 < o <
    width) the item's state o + 1 in repetition j + 1, and its standalone automaton numbers them
    alike.  A document state holding `start` is inside the lexeme only if nothing else leaves
    `start` (no sibling alternative was built from it): the NFA's moves out of it are still
    `start_moves`.
    """

    first: int
    last: int
    end: int
    dfa: DFA | None = None
    node: Node | None = None
    start: int = -1  # the NFA state before the lexeme ...
    start_moves: tuple[int, int] | None = None  # ... and its moves if they all enter the lexeme
    template: Any = None  # the lexeme's own NFA (`node` regions; a counted one's item NFA)
    open_ended: bool = False  # see `lexeme`
    counted: bool = False  # a bounded repetition counting over its item (see above)

    def __init__(self, first: int, last: int, end: int, dfa: DFA | None = None,
                 node: Node | None = None, start: int = -1,
                 start_moves: tuple[int, int] | None = None, template: Any = None,
                 open_ended: bool = False, counted: bool = False) -> None:
        # one dict update instead of a frozen dataclass's setattr per field (regions are made
        # per compile: every lexeme and embedded DFA of the document)
        self.__dict__.update(first=first, last=last, end=end, dfa=dfa, node=node, start=start,
                             start_moves=start_moves, template=template,
                             open_ended=open_ended, counted=counted)

    def local_state(self, inside: frozenset[int], at_start: bool, ends: bool,
                    standalone: Callable[[Node], StandaloneAutomaton]) -> tuple[DFA | StandaloneAutomaton, int]:
        """The lexeme automaton and its state for the document's NFA states `inside` the region
        (`at_start`: the set holds `start`; `ends`: the lexeme may end here)."""
        if self.dfa is not None:
            (x,) = inside  # an embedded DFA is deterministic: one NFA state
            return self.dfa, x - self.first + 1
        automaton = standalone(self.node)
        local = {x - self.first + 2 for x in inside}
        if at_start:
            local.add(0)
        if ends:
            local.add(1)
        return automaton, automaton.state_of(frozenset(local))

    @property
    def width(self) -> int:
        """A counted region's NFA states per repetition."""
        return self.template.num_states - 1

    def counted_state(self, inside: frozenset[int], at_start: bool,
                      standalone: Callable[[Node], StandaloneAutomaton]) -> "CountedPlace | None":
        """For a bounded repetition `item{lo,hi}`: the same place in the shared automaton of
        `item{0,HORIZON}` with as many repetitions left (at most HORIZON), which no token staying
        inside the lexeme can tell apart from this one (see `HORIZON`); None elsewhere.  Before
        the minimum the lexeme cannot end yet, so only the tokens inside agree (`past_min`)."""
        node = self.node
        if not self.counted or self.open_ended:
            return None
        where = _position(self.first, self.width, inside, at_start)
        if where is None:
            return None
        done, offsets = where
        counted = standalone(Repeat(node.item, 0, HORIZON))
        k = HORIZON - min(node.max - done, HORIZON)  # repetitions done there
        return CountedPlace(counted, counted_place(counted, k, offsets), done >= node.min)


def counted_place(counted: StandaloneAutomaton, done: int, offsets: frozenset[int] | None = None) -> int:
    """The state of the shared automaton `item{0,HORIZON}` (a counted region from NFA state 2)
    after `done` repetitions, between repetitions (`offsets` None) or at the given item state
    offsets inside the next one."""
    width = counted.nfa.regions[0].width
    if offsets is None:
        states = [0] if done == 0 else [2 + done * width]
    else:
        states = [2 + done * width + o for o in offsets]
    return counted.state_of(counted.closure(states))


#: Repetitions no token can count past: a bounded repetition with more than this many left acts,
#: for every token, like one with exactly this many (tokens are at most this many bytes).
HORIZON = 256


def _position(first: int, width: int, inside: frozenset[int],
              at_start: bool) -> tuple[int, frozenset[int] | None] | None:
    """(repetitions done, item state offsets or None between repetitions) of NFA states inside a
    counted region (see `Region`); None if they are not all at one place."""
    done: set[int] = {0} if at_start else set()
    offsets: set[int] = set()
    for x in inside:
        j, o = divmod(x - first, width)
        done.add(j)
        if o:
            offsets.add(o)
    if len(done) != 1 or (offsets and (at_start or len(offsets) != len(inside))):
        return None
    return done.pop(), frozenset(offsets) if offsets else None


class CountedPlace(NamedTuple):
    """A place in the shared automaton of a bounded repetition (see `Region.counted_state`)."""

    automaton: StandaloneAutomaton
    state: int
    past_min: bool  # the lexeme may end where the shared automaton says so (else: inside only)


class LexemeState(NamedTuple):
    """A document state inside a lexeme: the lexeme automaton, its state, the document state
    after the lexeme, and whether the lexeme may end here (the document state then holds the
    state after it too).  (A named tuple: one is made per such state, on a mask miss.)"""

    automaton: DFA | StandaloneAutomaton
    state: int
    after: int
    ends: bool
    counted: CountedPlace | None = None
