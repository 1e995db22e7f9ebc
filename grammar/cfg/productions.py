"""IR grammars with rule cycles lowered to a context-free grammar over regular terminals.

Rules that cannot reach a cycle are inlined (they are regular).  In the remaining rules,
every maximal run of RuleRef-free IR becomes one terminal (a byte DFA of its own), so the
parser only sees the boundaries the recursion needs.  Repetitions of recursive parts become
left-recursive helper rules.
"""
from __future__ import annotations

from dataclasses import dataclass

from formwork.grammar.errors import GrammarBudgetError, GrammarError, UndefinedRuleError
from formwork.grammar.ir import (
    Alt, And, Empty, Grammar, Node, Not, Nothing, Repeat, RuleRef, Seq, alt, children, repeat, seq,
)

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


def _references(node: Node, out: set[str]) -> set[str]:
    if isinstance(node, RuleRef):
        out.add(node.name)
    for child in children(node):
        _references(child, out)
    return out


def recursive_rules(grammar: Grammar) -> set[str]:
    """Rules from which a reference cycle is reachable (the ones that are not regular)."""
    refs: dict[str, set[str]] = {}
    for name, body in grammar.rules.items():
        refs[name] = _references(body, set())
        for target in refs[name]:
            if target not in grammar.rules:
                raise UndefinedRuleError(f"rule {target!r} is referenced by {name!r} but not defined")
    on_cycle = {n for n in refs if _reaches(refs, n, n)}
    return {n for n in refs if n in on_cycle or any(_reaches(refs, n, c) for c in on_cycle)}


def _reaches(refs: dict[str, set[str]], source: str, target: str) -> bool:
    seen: set[str] = set()
    stack = list(refs[source])
    while stack:
        n = stack.pop()
        if n == target:
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(refs[n])
    return False


class _Lowerer:
    def __init__(self, grammar: Grammar, recursive: set[str]):
        self.grammar = grammar
        self.recursive = recursive
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.productions: list[Production] = []
        self.terminals: list[Node] = []
        self.terminal_index: dict[Node, int] = {}
        self.helpers: dict[Node, int] = {}
        self.inlined: dict[str, Node] = {}
        self.regular: dict[Node, bool] = {}
        self.size = 0

    # -- regular parts
    def inline(self, node: Node) -> Node:
        """`node` with references to regular rules replaced by their bodies."""
        if isinstance(node, RuleRef):
            if node.name in self.recursive:
                return node
            got = self.inlined.get(node.name)
            if got is None:
                got = self.inlined[node.name] = self.inline(self.grammar.rules[node.name])
            return got
        if isinstance(node, Seq):
            return seq(*(self.inline(x) for x in node.items))
        if isinstance(node, Alt):
            return alt(*(self.inline(x) for x in node.items))
        if isinstance(node, Repeat):
            return repeat(self.inline(node.item), node.min, node.max)
        if isinstance(node, And):
            return And(self.inline(node.a), self.inline(node.b))
        if isinstance(node, Not):
            return Not(self.inline(node.a))
        return node

    def is_regular(self, node: Node) -> bool:
        got = self.regular.get(node)
        if got is None:
            got = self.regular[node] = not _references(node, set())
        return got

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
            else:
                for rhs in self.alternatives(node):
                    self.add(got, rhs)
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
        for count in range(node.min, node.max + 1):
            self.add(lhs, item * count)

    def symbols(self, node: Node) -> list[int]:
        """One right-hand side for `node` (a helper nonterminal where it needs alternatives)."""
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


def lower_grammar(grammar: Grammar) -> ContextFreeGrammar:
    """The context-free grammar of `grammar` (its rules may refer to each other in cycles)."""
    recursive = recursive_rules(grammar)
    low = _Lowerer(grammar, recursive)
    start = low.nonterminal(grammar.start)  # adds the productions of every rule it reaches
    return ContextFreeGrammar(low.names, low.productions, low.terminals, start)


class EmptyLanguageError(GrammarError):
    """The grammar derives no string (e.g. a required cycle with no base case)."""


def prune_unproductive(cfg: ContextFreeGrammar, empty_terminals: set[int]) -> ContextFreeGrammar:
    """Drop productions that can never derive a finished string; an empty start is an error.

    `empty_terminals` are terminal indices whose language is empty.
    """
    productive = [False] * len(cfg.names)
    changed = True
    while changed:
        changed = False
        for p in cfg.productions:
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
