"""The language of tagged regions, as grammar IR.

Free text is any bytes in which no trigger occurs.  The first trigger to be complete (the
leftmost end of an occurrence) opens a region: the text goes on with the rest of a begin
starting with that trigger, the region's constraint and its end string, then free text again.
With `free_text` False the text between regions is whitespace only.  The free text is two small
complete DFAs over the triggers (`Not(..., over_bytes=True)`): a matcher between regions tracks
only them, and their token masks are cached per state like any other.

A region's constraint may be recursive (a `Grammar`); the rules of each are kept apart by a
prefix, and the whole is then a `Grammar` for the Earley automaton.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from formwork.grammar.automaton import inline_rules
from formwork.grammar.cfg import is_recursive
from formwork.grammar.ir import And, ByteRange, ByteSet, Grammar, Node, Not, RuleRef, alt, lit, repeat, seq
from formwork.grammar.ir_chars import any_bytes
from formwork.grammar.ir_walk import replace_refs

WHITESPACE = repeat(ByteSet(((9, 10), (13, 13), (32, 32))), 0, None)  # JSON's: [ \t\n\r]*
START_RULE = "<tags>"


@dataclass(frozen=True)
class Region:
    """A region opened by `trigger`, written `begin` (which starts with it), `body`, `end`."""

    trigger: str
    begin: str
    body: Node | Grammar
    end: str


def tags_language(regions: Sequence[Region], triggers: Sequence[str], *, free_text: bool = True,
                  at_least_one: bool = False, stop_after_first: bool = False,
                  text: Node | None = None) -> Node | Grammar:
    """The IR of the output: free text (or whitespace) with regions, per the flags; with `text`, either
    regions only (at least one) or, instead, one text of `text`'s language in which no trigger occurs."""
    any_trigger = alt(*(lit(t) for t in triggers))
    no_trigger = Not(seq(any_bytes(), any_trigger, any_bytes()), over_bytes=True)
    if text is not None:
        only_regions = tags_language(regions, triggers, free_text=False, at_least_one=True,
                                     stop_after_first=stop_after_first)
        if isinstance(only_regions, Grammar):
            top = alt(only_regions.rules[START_RULE], And(text, no_trigger))
            return Grammar({**only_regions.rules, START_RULE: top}, START_RULE)
        return alt(only_regions, And(text, no_trigger))
    rules: dict[str, Node] = {}
    by_trigger: dict[str, list[Node]] = {}
    for i, region in enumerate(regions):
        body = _body_node(region.body, f"<tag {i}>", rules)
        rest = region.begin[len(region.trigger):]
        by_trigger.setdefault(region.trigger, []).append(seq(lit(rest), body, lit(region.end)))
    if free_text:
        between = no_trigger
        too_late = Not(seq(any_bytes(), any_trigger, any_bytes(), ByteRange(0, 255)), over_bytes=True)

        def lead(trigger: str) -> Node:  # free text up to the first trigger written, `trigger`
            return And(seq(any_bytes(), lit(trigger)), too_late)
    else:
        between = WHITESPACE

        def lead(trigger: str) -> Node:
            return seq(WHITESPACE, lit(trigger))
    region = alt(*(seq(lead(trigger), alt(*rests)) for trigger, rests in by_trigger.items()))
    if stop_after_first:
        top = region if at_least_one else alt(between, region)
    else:
        top = seq(repeat(region, 1 if at_least_one else 0, None), between)
    if not rules:
        return top
    return Grammar({**rules, START_RULE: top}, START_RULE)


def _body_node(body: Node | Grammar, prefix: str, rules: dict[str, Node]) -> Node:
    """`body` as a node; the rules of a recursive grammar go into `rules`, renamed under `prefix`."""
    if isinstance(body, Node):
        return body
    if not is_recursive(body):
        return inline_rules(body)
    done: dict[int, Node] = {}  # by identity: equal copies of shared nodes compare path by path
    for name, rule in body.rules.items():
        rules[f"{prefix}{name}"] = _renamed(rule, prefix, done)
    return RuleRef(f"{prefix}{body.start}")


def _renamed(root: Node, prefix: str, done: dict[int, Node]) -> Node:
    """`root` with its rule references renamed under `prefix`, each node once (`done`, by id),
    without recursion (lowered IR nests hundreds deep); shared marks stay."""
    return replace_refs(root, lambda ref: RuleRef(f"{prefix}{ref.name}"), done)
