"""FOLLOW sets over terminals (`cfg.follow_sets`) on random grammars: equal to the textbook
round-robin fixpoint, and a superset of what the Earley parser expects after every scan it makes."""
from __future__ import annotations

from collections import deque

from hypothesis import given, settings, strategies as st

from formwork.grammar.cfg.earley import DEAD_SET, EarleyParser
from formwork.grammar.cfg.productions import ContextFreeGrammar, Production


@st.composite
def grammars(draw) -> tuple[ContextFreeGrammar, set[int], int]:
    """(grammar, nullable terminals, number of terminals): up to 6 nonterminals and 5 terminals,
    rules with empty, nullable, left- and right-recursive bodies."""
    nonterminals = draw(st.integers(1, 6))
    terminals = draw(st.integers(1, 5))
    symbol = st.integers(-terminals, nonterminals - 1)  # -1 - t is terminal t
    productions = [Production(lhs, tuple(body)) for lhs in range(nonterminals)
                   for body in draw(st.lists(st.lists(symbol, max_size=4), min_size=1, max_size=3))]
    nullable = draw(st.sets(st.integers(0, terminals - 1), max_size=terminals))
    cfg = ContextFreeGrammar([f"n{i}" for i in range(nonterminals)], productions, [None] * terminals, 0)
    return cfg, nullable, terminals


def reference_follow(parser: EarleyParser, num_terminals: int) -> list[frozenset[int]]:
    """FOLLOW by the textbook definition: FIRST and FOLLOW grown round by round over every
    production until nothing changes."""
    count = len(parser.by_lhs)
    first: list[set[int]] = [set() for _ in range(count)]
    follow: list[set[int]] = [set() for _ in range(count + num_terminals)]  # terminal t at count + t

    def first_of(symbols: tuple[int, ...]) -> tuple[set[int], bool]:
        out: set[int] = set()
        for x in symbols:
            out |= first[x] if x >= 0 else {~x}
            if not (parser.nullable[x] if x >= 0 else ~x in parser.nullable_terminals):
                return out, False
        return out, True

    changed = True
    while changed:
        changed = False
        for lhs, rhs in zip(parser.lhs, parser.rhs):
            got = first_of(rhs)[0]
            changed |= not got <= first[lhs]
            first[lhs] |= got
    changed = True
    while changed:
        changed = False
        for lhs, rhs in zip(parser.lhs, parser.rhs):
            for i, x in enumerate(rhs):
                after, empty = first_of(rhs[i + 1:])
                if empty:
                    after |= follow[lhs]
                target = follow[x if x >= 0 else count + ~x]
                changed |= not after <= target
                target |= after
    return [frozenset(follow[count + t]) for t in range(num_terminals)]


@settings(deadline=None, max_examples=300)
@given(grammars())
def test_follow_sets_are_the_textbook_fixpoint(case):
    cfg, nullable, terminals = case
    parser = EarleyParser(cfg, nullable)
    assert parser.terminal_follow(terminals) == reference_follow(parser, terminals)


@settings(deadline=None, max_examples=100)
@given(grammars())
def test_every_set_after_a_scan_expects_only_the_terminals_follow(case):
    """What the masks rely on (`ConfigMasks._keep`): after scanning t, the parser expects a
    subset of FOLLOW(t); checked on the first 60 sets reached by scans from the start, breadth first."""
    cfg, nullable, terminals = case
    parser = EarleyParser(cfg, nullable)
    follow = parser.terminal_follow(terminals)
    seen, todo = {parser.start}, deque([parser.start])
    while todo and len(seen) < 60:
        sid = todo.popleft()
        for t in list(parser.expected(sid)):
            after = parser.scan(sid, t)
            assert after != DEAD_SET
            assert set(parser.expected(after)) <= follow[t]
            if after not in seen:
                seen.add(after)
                todo.append(after)
