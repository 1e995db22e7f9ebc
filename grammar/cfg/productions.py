"""IR grammars with rule cycles lowered to a context-free grammar over regular terminals.

Rules that cannot reach a cycle are inlined (they are regular).  In the remaining rules,
every maximal run of RuleRef-free IR becomes one terminal (a byte DFA of its own), so the
parser only sees the boundaries the recursion needs.  Repetitions of recursive parts become
left-recursive helper rules.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from formwork.grammar.budget import CompileBudget
from formwork.grammar.errors import EmptyLanguageError, GrammarBudgetError, GrammarError, UndefinedRuleError
from formwork.grammar.ir import (
    Alt, Empty, Grammar, Node, Nothing, Repeat, RuleRef, Seq, children, map_children, seq,
)
from formwork.grammar.shared_nodes import is_shared, share

MAX_EXPANSION = 10_000  # symbols produced by unrolling bounded repetitions of recursive parts


@dataclass(frozen=True)
class Production:
    """lhs -> rhs; symbols >= 0 are nonterminals, symbols < 0 are terminal ~symbol."""

    lhs: int
    rhs: tuple[int, ...]


@dataclass
class ContextFreeGrammar:
    """Nonterminal names, productions, terminal IR nodes and the start nonterminal."""

    names: list[str]
    productions: list[Production]
    terminals: list[Node]
    start: int


def terminal_symbol(index: int) -> int:
    return ~index


class References:
    """The rule names each IR node refers to, memoised by node identity (each shared subtree is
    walked once), iteratively (no recursion limit on deep trees), ticking `budget` as it goes."""

    def __init__(self, budget: CompileBudget | None = None):
        self._memo: dict[int, tuple[Node, frozenset[str]]] = {}  # id -> (node kept alive, names)
        self._tick = budget.tick if budget is not None else no_tick

    def __call__(self, node: Node) -> frozenset[str]:
        memo = self._memo
        got = memo.get(id(node))
        if got is not None:
            return got[1]
        stack: list[tuple[Node, bool]] = [(node, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in memo:
                continue
            if isinstance(n, RuleRef):
                memo[id(n)] = (n, frozenset((n.name,)))
                continue
            if not expanded:
                self._tick("finding rule references")
                stack.append((n, True))
                stack.extend((k, False) for k in children(n) if id(k) not in memo)
                continue
            memo[id(n)] = (n, _union(memo[id(k)][1] for k in children(n)))
        return memo[id(node)][1]


def _union(parts: Iterable[frozenset[str]]) -> frozenset[str]:
    """The union of `parts`, reusing a part when it is the only non-empty one."""
    first: frozenset[str] = _NO_NAMES
    acc: set[str] | None = None
    for part in parts:
        if not part or part is first:
            continue
        if not first:
            first = part
        else:
            acc = set(first) if acc is None else acc
            acc |= part
    return first if acc is None else frozenset(acc)


_NO_NAMES: frozenset[str] = frozenset()


def no_tick(what: str) -> None:
    """`CompileBudget.tick` where there is no budget."""


def recursive_rules(grammar: Grammar, budget: CompileBudget | None = None,
                    references: References | None = None) -> set[str]:
    """Rules from which a reference cycle is reachable (the ones that are not regular)."""
    references = references or References(budget)
    refs: dict[str, frozenset[str]] = {}
    for name, body in grammar.rules.items():
        refs[name] = references(body)
        for target in refs[name]:
            if target not in grammar.rules:
                raise UndefinedRuleError(f"rule {target!r} is referenced by {name!r} but not defined")
    # peel off the rules whose references are all regular; what remains reaches a cycle
    tick = budget.tick if budget is not None else no_tick
    users: dict[str, list[str]] = {name: [] for name in refs}
    pending = {name: len(targets) for name, targets in refs.items()}
    for name, targets in refs.items():
        for target in targets:
            users[target].append(name)
    ready = [name for name, count in pending.items() if count == 0]
    regular: set[str] = set()
    while ready:
        tick("finding recursive rules")
        name = ready.pop()
        regular.add(name)
        for user in users[name]:
            pending[user] -= 1
            if pending[user] == 0:
                ready.append(user)
    return set(refs) - regular


class _Lowerer:
    def __init__(self, grammar: Grammar, recursive: set[str], references: References,
                 budget: CompileBudget | None):
        self.grammar = grammar
        self.recursive = recursive
        self.references = references
        self.tick = budget.tick if budget is not None else no_tick
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.productions: list[Production] = []
        self.terminals: list[Node] = []
        self.terminal_index: dict[Node, int] = {}
        self.helpers: dict[Node, int] = {}
        self.chains: dict[tuple[int, ...], list[int]] = {}  # see `up_to`
        self.marks: dict[Node, list[int]] = {}  # shared marks' symbols (see `symbols`)
        self.inlined: dict[str, Node] = {}
        self.inline_memo: dict[int, tuple[Node, Node]] = {}  # id -> (node kept alive, inlined)
        self.size = 0

    # -- regular parts
    def inline(self, node: Node) -> Node:
        """`node` with references to regular rules replaced by their bodies (each shared
        subtree rebuilt once; subtrees that refer to no regular rule are kept as they are)."""
        if self.references(node) <= self.recursive:
            return node
        if isinstance(node, RuleRef):
            got = self.inlined.get(node.name)
            if got is None:
                got = self.inlined[node.name] = self.inline(self.grammar.rules[node.name])
            return got
        memo = self.inline_memo.get(id(node))
        if memo is not None:
            return memo[1]
        self.tick("inlining regular rules")
        # a shared mark stays one (rebuilt, the mark `repeat(x, 1, 1)` would be just x)
        out = share(self.inline(node.item)) if is_shared(node) else map_children(node, self.inline)
        self.inline_memo[id(node)] = (node, out)
        return out

    def is_regular(self, node: Node) -> bool:
        return not self.references(node)

    def terminal(self, node: Node) -> int:
        got = self.terminal_index.get(node)
        if got is None:
            got = self.terminal_index[node] = len(self.terminals)
            self.terminals.append(node)
        return terminal_symbol(got)

    # -- nonterminals
    def nonterminal(self, name: str) -> int:
        got = self.index.get(name)
        if got is None:
            got = self.index[name] = len(self.names)
            self.names.append(name)
            for rhs in self.alternatives(self.inline(self.grammar.rules[name])):
                self.add(got, rhs)
        return got

    def add(self, lhs: int, rhs: list[int]) -> None:
        self.tick("building the context-free grammar")
        self.size += len(rhs) + 1
        if self.size > MAX_EXPANSION * 10:
            raise GrammarBudgetError("the context-free grammar grew past its size budget")
        self.productions.append(Production(lhs, tuple(rhs)))

    def helper(self, node: Node) -> int:
        got = self.helpers.get(node)
        if got is None:
            got = self.helpers[node] = len(self.names)
            self.names.append(f"<helper {len(self.helpers)}>")
            if isinstance(node, Repeat):
                self.repetition(got, node)
            else:  # an Alt: a production per item (a loop here, not `alternatives`: fewer frames)
                for item in node.items:
                    if not isinstance(item, Nothing):
                        self.add(got, self.symbols(item))
        return got

    def repetition(self, lhs: int, node: Repeat) -> None:
        item = self.symbols(node.item)
        if node.max is None:
            star = self.helper(Repeat(node.item, 0, None)) if node.min else lhs
            if node.min:
                self.add(lhs, item * node.min + [star])
            else:
                self.add(lhs, [])
                self.add(lhs, [lhs] + item)
            return
        if node.max * len(item) > MAX_EXPANSION:
            raise GrammarBudgetError(f"bounded repetition {{{node.min},{node.max}}} of a recursive part is too large")
        optional = node.max - node.min
        self.add(lhs, item * node.min + ([self.up_to(item, optional)] if optional else []))

    def up_to(self, item: list[int], count: int) -> int:
        """A nonterminal for 0 to `count` (>= 1) repetitions of the right-hand side `item`:
        U_k -> () | item U_{k-1} (U_1 -> () | item), made once per item and count, so that
        item{lo,hi} has about 2 x (hi - lo) x len(item) symbols rather than one production per
        count (hi^2 / 2 x len(item)), and its Earley sets hold a few items rather than one per
        count still possible."""
        chain = self.chains.setdefault(tuple(item), [])
        while len(chain) < count:
            below = chain[-1:]
            got = len(self.names)
            self.names.append(f"<up to {len(chain) + 1} repetitions, chain {chain[0] if chain else got}>")
            self.add(got, [])
            self.add(got, item + below)
            chain.append(got)
        return chain[count - 1]

    def symbols(self, node: Node) -> list[int]:
        """One right-hand side for `node` (a helper nonterminal where it needs alternatives)."""
        self.tick("building the context-free grammar")
        if isinstance(node, Empty):
            return []
        if self.is_regular(node):
            return [self.terminal(node)]
        if isinstance(node, RuleRef):
            return [self.nonterminal(node.name)]
        if isinstance(node, Seq):
            out: list[int] = []
            run: list[Node] = []
            for item in node.items:
                if self.is_regular(item):
                    run.append(item)
                    continue
                if run:
                    out.append(self.terminal(seq(*run)))
                    run = []
                out.extend(self.symbols(item))
            if run:
                out.append(self.terminal(seq(*run)))
            return out
        if isinstance(node, Repeat) and node.min == node.max == 1:
            # a shared mark (`shared_nodes`): its item's symbols, made once, and no nonterminal of
            # its own, which would cost Python frames on the way down (an object's member list nests
            # two marks a member) and a production
            got = self.marks.get(node)
            if got is None:
                got = self.marks[node] = self.symbols(node.item)
            return list(got)
        if isinstance(node, (Alt, Repeat)):
            return [self.helper(node)]
        raise GrammarError(f"{type(node).__name__} over recursive rules is not context-free; "
                           "intersection and complement need regular operands")

    def alternatives(self, node: Node) -> list[list[int]]:
        if isinstance(node, Nothing):
            return []
        if isinstance(node, Alt):
            return [self.symbols(item) for item in node.items if not isinstance(item, Nothing)]
        return [self.symbols(node)]


def lower_grammar(grammar: Grammar, budget: CompileBudget | None = None) -> ContextFreeGrammar:
    """The context-free grammar of `grammar` (its rules may refer to each other in cycles)."""
    references = References(budget)
    recursive = recursive_rules(grammar, budget, references)
    low = _Lowerer(grammar, recursive, references, budget)
    start = low.nonterminal(grammar.start)  # adds the productions of every rule it reaches
    return ContextFreeGrammar(low.names, low.productions, low.terminals, start)


def prune_unproductive(cfg: ContextFreeGrammar, empty_terminals: set[int],
                       budget: CompileBudget | None = None) -> ContextFreeGrammar:
    """Drop productions that can never derive a finished string; an empty start is an error.

    `empty_terminals` are terminal indices whose language is empty.
    """
    tick = budget.tick if budget is not None else no_tick
    productive = [False] * len(cfg.names)
    changed = True
    while changed:
        changed = False
        for p in cfg.productions:
            tick("finding productive rules")
            if not productive[p.lhs] and all(
                    (s >= 0 and productive[s]) or (s < 0 and ~s not in empty_terminals) for s in p.rhs):
                productive[p.lhs] = changed = True
    if not productive[cfg.start]:
        raise EmptyLanguageError(
            f"rule {cfg.names[cfg.start]!r} derives no finite string: every alternative needs itself "
            "(a recursive rule or $ref cycle without a base case)")
    kept = [p for p in cfg.productions
            if productive[p.lhs] and all((s >= 0 and productive[s]) or (s < 0 and ~s not in empty_terminals)
                                         for s in p.rhs)]
    return ContextFreeGrammar(cfg.names, kept, cfg.terminals, cfg.start)
