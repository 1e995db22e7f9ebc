"""IR grammars with rule cycles lowered to a context-free grammar over regular terminals.

Rules that cannot reach a cycle are inlined (they are regular).  In the remaining rules,
every maximal run of RuleRef-free IR becomes one terminal (a byte DFA of its own), so the
parser only sees the boundaries the recursion needs.  Repetitions of recursive parts become
left-recursive helper rules.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from formwork.grammar.budget import CompileBudget
from formwork.grammar.errors import EmptyLanguageError, GrammarBudgetError, GrammarError, UndefinedRuleError
from formwork.grammar.ir import Alt, Empty, Grammar, Node, Nothing, Repeat, RuleRef, Seq, seq
from formwork.grammar.ir_walk import References, dependency_order, no_tick, replace_refs

__all__ = ["ContextFreeGrammar", "Production", "References", "lower_grammar", "no_tick", "prune_unproductive",
           "recursive_rules", "terminal_symbol"]

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
    """Builds the productions without recursion (lowered IR nests past Python's stack limit): a
    nonterminal or helper gets its number when first used and its productions when the work queue
    (`todo`) reaches it, and `symbols` and `inline` walk with explicit stacks."""

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
        self.inline_memo: dict[int, Node] = {}  # id -> inlined (of nodes the grammar keeps alive)
        self.todo: deque[tuple[int, Node, bool]] = deque()  # (lhs, node, is a helper) to expand
        self.size = 0

    # -- regular parts
    def inline(self, node: Node) -> Node:
        """`node` with references to regular rules replaced by their bodies (each shared
        subtree rebuilt once; subtrees that refer to no regular rule are kept as they are)."""
        recursive, references = self.recursive, self.references
        if references(node) <= recursive:
            return node
        grammar, inlined = self.grammar, self.inlined
        regular_targets = lambda name: sorted(references(grammar.rules[name]) - recursive)  # noqa: E731
        for name in dependency_order(sorted(references(node) - recursive), regular_targets):
            if name not in inlined:
                inlined[name] = self._inline_refs(grammar.rules[name])
        return self._inline_refs(node)

    def _inline_refs(self, node: Node) -> Node:
        """`inline` once the regular rules below `node` are inlined."""
        def keep(n: Node) -> bool:
            self.tick("inlining regular rules")
            return self.references(n) <= self.recursive

        return replace_refs(node, lambda ref: self.inlined[ref.name], self.inline_memo, keep)

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
        """The number of rule `name` (its productions are made when `run` reaches it)."""
        got = self.index.get(name)
        if got is None:
            got = self.index[name] = len(self.names)
            self.names.append(name)
            self.todo.append((got, self.grammar.rules[name], False))
        return got

    def run(self) -> None:
        """Make the productions of every nonterminal and helper numbered so far, and of those
        they number in turn."""
        while self.todo:
            lhs, node, is_helper = self.todo.popleft()
            if not is_helper:
                for rhs in self.alternatives(self.inline(node)):
                    self.add(lhs, rhs)
            elif isinstance(node, Repeat):
                self.repetition(lhs, node)
            else:  # an Alt: a production per item
                for item in node.items:
                    if not isinstance(item, Nothing):
                        self.add(lhs, self.symbols(item))

    def add(self, lhs: int, rhs: list[int]) -> None:
        self.tick("building the context-free grammar")
        self.size += len(rhs) + 1
        if self.size > MAX_EXPANSION * 10:
            raise GrammarBudgetError("the context-free grammar grew past its size budget")
        self.productions.append(Production(lhs, tuple(rhs)))

    def helper(self, node: Node) -> int:
        """The number of a helper nonterminal for `node` (an Alt or a Repeat; its productions are
        made when `run` reaches it)."""
        got = self.helpers.get(node)
        if got is None:
            got = self.helpers[node] = len(self.names)
            self.names.append(f"<helper {len(self.helpers)}>")
            self.todo.append((got, node, True))
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

    def symbols(self, root: Node) -> list[int]:
        """One right-hand side for `root` (a helper nonterminal where it needs alternatives).  A
        sequence spells its items' symbols, with runs of regular items as one terminal, and a
        shared mark (`shared_nodes`) its item's, made once (no nonterminal of its own): those
        nest (an object's member list two marks a member), so they are walked with a stack,
        each node's symbols made after its items' (`made`, by id)."""
        made: dict[int, list[int]] = {}
        stack = [root]
        while stack:
            node = stack[-1]
            if id(node) in made:
                stack.pop()
                continue
            self.tick("building the context-free grammar")
            got = self._flat_symbols(node)
            if got is None:
                if isinstance(node, Seq):
                    inner = [item for item in node.items if not self.is_regular(item)]
                else:  # a mark
                    inner = [node.item]
                pending = [item for item in inner if id(item) not in made]
                if pending:
                    stack.extend(reversed(pending))
                    continue
                got = self._seq_symbols(node, made) if isinstance(node, Seq) else made[id(node.item)]
                if not isinstance(node, Seq):
                    self.marks[node] = got
            made[id(node)] = got
            stack.pop()
        return list(made[id(root)])

    def _flat_symbols(self, node: Node) -> list[int] | None:
        """`symbols(node)` where it needs no other node's symbols (None: a Seq or a shared mark
        not made yet)."""
        if isinstance(node, Empty):
            return []
        if self.is_regular(node):
            return [self.terminal(node)]
        if isinstance(node, RuleRef):
            return [self.nonterminal(node.name)]
        if isinstance(node, Seq):
            return None
        if isinstance(node, Repeat) and node.min == node.max == 1:
            return self.marks.get(node)
        if isinstance(node, (Alt, Repeat)):
            return [self.helper(node)]
        raise GrammarError(f"{type(node).__name__} over recursive rules is not context-free; "
                           "intersection and complement need regular operands")

    def _seq_symbols(self, node: Seq, made: dict[int, list[int]]) -> list[int]:
        """A sequence's symbols, its non-regular items' already `made`."""
        out: list[int] = []
        run: list[Node] = []
        for item in node.items:
            if self.is_regular(item):
                run.append(item)
                continue
            if run:
                out.append(self.terminal(seq(*run)))
                run = []
            out.extend(made[id(item)])
        if run:
            out.append(self.terminal(seq(*run)))
        return out

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
    start = low.nonterminal(grammar.start)
    low.run()  # adds the productions of every rule it reaches
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
