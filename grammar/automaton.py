"""IR to minimal byte DFA: rule inlining, NFA construction, And/Not via products."""
from __future__ import annotations

from formwork.grammar.budget import CompileBudget
from formwork.grammar.dfa import DFA, complement, product
from formwork.grammar.errors import RecursionNotSupportedError, UndefinedRuleError
from formwork.grammar.ir import (
    Alt, And, Grammar, Node, Not, Repeat, RuleRef, Seq, alt, any_text, repeat, seq,
)
from formwork.grammar.nfa import NFA, determinize


def inline_rules(grammar: Grammar) -> Node:
    """Replace every RuleRef by its rule's body; a reference cycle is an error."""
    done: dict[str, Node] = {}
    active: list[str] = []

    def resolve(name: str) -> Node:
        if name in done:
            return done[name]
        if name not in grammar.rules:
            raise UndefinedRuleError(f"rule {name!r} is referenced but not defined")
        if name in active:
            cycle = " -> ".join(active[active.index(name):] + [name])
            raise RecursionNotSupportedError(
                f"rules form a cycle ({cycle}); recursion needs the context-free grammar compiler")
        active.append(name)
        body = substitute(grammar.rules[name])
        active.pop()
        done[name] = body
        return body

    memo: dict[int, Node] = {}

    def substitute(node: Node) -> Node:
        key = id(node)
        if key in memo:
            return memo[key]
        if isinstance(node, RuleRef):
            out = resolve(node.name)
        elif isinstance(node, Seq):
            out = seq(*(substitute(x) for x in node.items))
        elif isinstance(node, Alt):
            out = alt(*(substitute(x) for x in node.items))
        elif isinstance(node, Repeat):
            out = repeat(substitute(node.item), node.min, node.max)
        elif isinstance(node, And):
            out = And(substitute(node.a), substitute(node.b))
        elif isinstance(node, Not):
            out = Not(substitute(node.a))
        else:
            out = node
        if not isinstance(node, RuleRef):
            memo[key] = out
        return out

    return resolve(grammar.start)


class AutomatonBuilder:
    """Compiles IR nodes to minimal DFAs under one budget, memoising And/Not operands."""

    def __init__(self, budget: CompileBudget | None = None):
        self.budget = (budget or CompileBudget()).start()
        self._memo: dict[Node, DFA] = {}

    def dfa(self, node: Node) -> DFA:
        got = self._memo.get(node)
        if got is not None:
            return got
        if isinstance(node, And):
            out = product(self.dfa(node.a), self.dfa(node.b), "and", self.budget)
        elif isinstance(node, Not):
            out = complement(self.dfa(node.a), self.dfa(any_text()), self.budget)
        else:
            nfa = NFA(self.budget, self.dfa)
            s, e = nfa.new_state(), nfa.new_state()
            nfa.build(node, s, e)
            out = determinize(nfa, s, e, self.budget)
        self._memo[node] = out
        return out


def compile_dfa(node_or_grammar: Node | Grammar, budget: CompileBudget | None = None) -> DFA:
    """Minimal byte DFA of an IR node or a (non-recursive) Grammar."""
    node = inline_rules(node_or_grammar) if isinstance(node_or_grammar, Grammar) else node_or_grammar
    return AutomatonBuilder(budget).dfa(node)
