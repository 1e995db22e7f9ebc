"""Rule references and recursive rules (productions.References, recursive_rules) against their
textbook definitions on random grammars: the names under a node are those a plain tree walk finds
(shared subtrees are only visited once), and a rule is recursive when it reaches a rule that
reaches itself."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from formwork.grammar.cfg.productions import References, recursive_rules
from formwork.grammar.ir import Grammar, Node, RuleRef, alt, children, lit, repeat, seq


def _walk(node: Node) -> set[str]:
    if isinstance(node, RuleRef):
        return {node.name}
    return set().union(*(_walk(child) for child in children(node)))


def _reaches(refs: dict[str, set[str]], source: str, target: str) -> bool:
    seen, stack = set(), list(refs[source])
    while stack:
        name = stack.pop()
        if name == target:
            return True
        if name not in seen:
            seen.add(name)
            stack.extend(refs[name])
    return False


@st.composite
def grammars(draw) -> Grammar:
    """Up to 8 rules whose bodies combine references, literals and subtrees shared between them."""
    names = [f"r{i}" for i in range(draw(st.integers(1, 8)))]
    pool: list[Node] = [lit("x"), lit("y")]
    for _ in range(draw(st.integers(0, 20))):
        kind = draw(st.sampled_from(["ref", "seq", "alt", "repeat"]))
        if kind == "ref":
            pool.append(RuleRef(draw(st.sampled_from(names))))
        else:
            parts = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
            pool.append(seq(*parts) if kind == "seq" else alt(*parts) if kind == "alt" else repeat(parts[0], 0, None))
    rules = {name: draw(st.sampled_from(pool)) for name in names}
    return Grammar(rules, names[0])


@settings(max_examples=200, deadline=None)
@given(grammars())
def test_references_and_recursive_rules_match_their_definitions(grammar):
    references = References()
    refs = {name: _walk(body) for name, body in grammar.rules.items()}
    for name, body in grammar.rules.items():
        assert references(body) == refs[name]
    on_cycle = {name for name in refs if _reaches(refs, name, name)}
    expected = {name for name in refs if name in on_cycle or any(_reaches(refs, name, c) for c in on_cycle)}
    assert recursive_rules(grammar) == expected
