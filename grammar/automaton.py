"""IR to byte DFAs: rule inlining, NFA construction, lazy subset construction, And/Not via products."""
from __future__ import annotations

from formwork.grammar.budget import CompileBudget
from formwork.grammar.counted_dfa import COUNT_FROM, CountedDFA, counted_intersection, is_prefix_code
from formwork.grammar.dfa import DFA, complement, product
from formwork.grammar.errors import RecursionNotSupportedError, UndefinedRuleError
from formwork.grammar.ir import And, Grammar, Node, Not, Repeat
from formwork.grammar.ir_chars import any_bytes, any_text
from formwork.grammar.ir_walk import References, dependency_order, replace_refs
from formwork.grammar.gc_pause import paused_gc
from formwork.grammar.lazy_dfa import LazyDFA
from formwork.grammar.lexemes import boundary_twin
from formwork.grammar.nfa import FINAL, NFA, START
from formwork.grammar.subset_builder import SubsetBuilder


def inline_rules(grammar: Grammar) -> Node:
    """Replace every RuleRef by its rule's body; a reference cycle is an error.  Shared nodes
    (`shared_nodes`) stay shared.  Rules are inlined in dependency order (each after the rules
    it refers to), every walk with an explicit stack: a chain of rules nests as deep as it is long."""
    references = References()

    def targets(name: str) -> list[str]:
        if name not in grammar.rules:
            raise UndefinedRuleError(f"rule {name!r} is referenced but not defined")
        return sorted(references(grammar.rules[name]))

    def cycle(path: list[str]) -> Exception:
        return RecursionNotSupportedError(
            f"rules form a cycle ({' -> '.join(path)}); recursion needs the context-free grammar compiler")

    done: dict[str, Node] = {}
    memo: dict[int, Node] = {}  # id -> inlined, over the grammar's (live) nodes
    for name in dependency_order([grammar.start], targets, cycle):
        done[name] = replace_refs(grammar.rules[name], lambda ref: done[ref.name], memo)
    return done[grammar.start]


class AutomatonBuilder:
    """Compiles IR nodes to DFAs under one budget, memoising results.

    `dfa(node)` is lazy (states built on first use) except for `And` / `Not`, which need
    complete operands for their product construction and are therefore eager and minimal.
    """

    def __init__(self, budget: CompileBudget | None = None):
        self.budget = (budget or CompileBudget()).start()
        self._memo: dict[Node, DFA | LazyDFA] = {}
        self._eager: dict[Node, DFA] = {}
        self._lexemes: dict[Node, LazyDFA] = {}
        self._counted: dict[Node, CountedDFA] = {}  # see `embedded`
        self._templates: dict[Node, NFA] = {}  # lexeme -> `lexeme_template(lexeme)`, as made
        self._parent: AutomatonBuilder | None = None

    def fork(self, budget: CompileBudget) -> "AutomatonBuilder":
        """A builder for one compilation under `budget` that reuses this builder's automata and
        keeps the ones it builds to itself until `adopt`: concurrent compilations each fork, so
        none waits for another and none sees another's half-built automata."""
        child = AutomatonBuilder(budget)
        child._parent = self
        return child

    def adopt(self, child: "AutomatonBuilder") -> None:
        """Keep the automata a finished fork built (where another fork was first, its stay)."""
        for mine, theirs in ((self._memo, child._memo), (self._eager, child._eager),
                             (self._lexemes, child._lexemes), (self._counted, child._counted)):
            for node, got in theirs.items():
                mine.setdefault(node, got)

    def _find(self, table: str, node: Node) -> DFA | LazyDFA | None:
        got = getattr(self, table).get(node)
        if got is None and self._parent is not None:
            got = getattr(self._parent, table).get(node)
        return got

    def dfa(self, node: Node, keep: bool = True) -> DFA | LazyDFA:
        """The automaton of `node`, memoised unless `keep` is False (a whole document: only its
        pieces are worth keeping for later compilations); a complete DFA built of it will do (a
        renewed builder takes over only those: `take_eager`)."""
        got = self._find("_memo", node) or self._find("_eager", node)
        if got is not None:
            return got
        with paused_gc():
            out = self._build(node)
        if keep:
            self._memo[node] = out
        return out

    def _build(self, node: Node) -> DFA | LazyDFA:
        if isinstance(node, And) and node.a == node.b:  # x & x == x: just the complete DFA of x
            out: DFA | LazyDFA = self.eager(node.a)
        elif isinstance(node, And):
            out = product(self.eager(node.a), self.eager(node.b), "and", self.budget)
        elif isinstance(node, Not):
            universe = any_bytes() if node.over_bytes else any_text()
            out = complement(self.eager(node.a), self.eager(universe), self.budget)
        else:
            nfa = NFA(node, self.budget, self.embedded, template_of=self.lexeme_template, known=self._known())
            out = LazyDFA(SubsetBuilder(nfa, START, FINAL, self.budget, empty=nfa.empty), root=node,
                          standalone=self.lexeme_automaton)
        return out

    def _known(self) -> tuple:
        """What the C NFA builder may take without calling `embedded` or `lexeme_template` (see
        `nfa.NFA`): the `_eager` tables `_find` reads, `COUNT_FROM` (an And over a repetition
        bounded from there may count: `embedded` decides) and the lexemes' templates."""
        root = self
        while root._parent is not None:
            root = root._parent
        tables = (self._eager,) if self._parent is None else (self._eager, self._parent._eager)
        return tables, COUNT_FROM, root._templates

    def embedded(self, node: Node) -> DFA | CountedDFA:
        """What a document NFA embeds for an `And` / `Not` node: its complete DFA, or for a
        language under a large repetition bound (`x & item{lo,hi}`, hi from `COUNT_FROM`, of an
        item that `is_prefix_code`: what maxLength with a pattern or format lowers to) a
        `CountedDFA` that counts the repetitions (kept like the DFAs)."""
        bounded = node.b if isinstance(node, And) else None
        if (not isinstance(bounded, Repeat) or bounded.max is None or bounded.max < COUNT_FROM
                or not is_prefix_code(self.eager(bounded.item))):
            return self.eager(node)
        got = self._find("_counted", node)
        if got is None:
            pattern = node.a if bounded.min == 0 else And(node.a, Repeat(bounded.item, bounded.min, None))
            chars = self.eager(Repeat(bounded.item, 0, None))
            got = self._counted[node] = counted_intersection(self.eager(pattern), chars, bounded.max, self.budget)
        return got

    def lexeme_automaton(self, node: Node) -> LazyDFA:
        """The automaton of a lexeme on its own, numbered like its region in any document NFA
        (start 0, end 1, then the lexeme's states in the order the document built them).  A fork
        asks its parent: a lexeme's automaton (and its cached masks) outlives any one compilation,
        and a document asks for it again when its masks are computed, after its compile."""
        if self._parent is not None:
            return self._parent.lexeme_automaton(node)
        got = self._lexemes.get(node)
        if got is None:
            budget = CompileBudget().start()  # shared by later compilations: not this one's budget
            # its pieces are built under that budget too (this builder's own started long ago)
            pieces = self.fork(budget)
            nfa = NFA(node, budget, pieces.eager, positions=isinstance(node, Repeat))
            self.adopt(pieces)
            # a fork on another thread may have made it meanwhile: every caller gets the first one
            got = self._lexemes.setdefault(node, LazyDFA(SubsetBuilder(nfa, START, FINAL, budget),
                                                         root=("lexeme", node)))
            twin = boundary_twin(node)
            if twin is not None and got.boundary_twin is None:
                got.boundary_twin = self.lexeme_automaton(twin)
            self._templates.setdefault(node, got.nfa)
        return got

    def lexeme_template(self, node: Node) -> NFA:
        """The NFA of `lexeme_automaton(node)`, which documents splice in."""
        return self.lexeme_automaton(node).nfa

    def take_eager(self, other: "AutomatonBuilder", nodes: list[Node]) -> None:
        """Keep the complete DFAs that `other` has built of `nodes` (a renewed builder's pieces)."""
        self._eager.update((node, other._eager[node]) for node in nodes if node in other._eager)

    def eager(self, node: Node) -> DFA:
        """The complete, minimal DFA of `node`."""
        got = self._find("_eager", node)
        if got is None:
            out = self.dfa(node)
            got = self._eager[node] = out.materialize(self.budget) if isinstance(out, LazyDFA) else out
        return got


def compile_dfa(node_or_grammar: Node | Grammar, budget: CompileBudget | None = None) -> DFA | LazyDFA:
    """Byte DFA of an IR node or a (non-recursive) Grammar (lazy unless the top is And/Not)."""
    node = inline_rules(node_or_grammar) if isinstance(node_or_grammar, Grammar) else node_or_grammar
    return AutomatonBuilder(budget).dfa(node)
