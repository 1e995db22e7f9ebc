"""Numbers and strings: merge the scalar keywords of a conjunction of subschemas and lower them
to IR.

Numbers intersect their bounds, integer `format`s (int32 & co) and ``multipleOf`` divisors
(decimal ones exactly, see `multiples`) into a range pattern; strings intersect ``pattern`` and
``format`` languages with the ``minLength``/``maxLength`` bounds.  The usual cases become shared leaves (`Lowerer.leaf`).
"""
from __future__ import annotations

import math
from decimal import Decimal
from typing import TYPE_CHECKING, Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import NOTHING, And, Node, alt, lit
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema import formats, multiples, numbers
from formwork.grammar.json_schema.errors import UnsupportedSchemaError
from formwork.grammar.json_schema.expand import Sub
from formwork.grammar.json_schema.pieces import encoded_format
from formwork.grammar.json_schema.strings import quoted, string_content
from formwork.schemas.pointer import child

if TYPE_CHECKING:
    from formwork.grammar.json_schema.lowering import Lowerer


def lower_number(lw: "Lowerer", subs: list[Sub], integer_only: bool) -> Node:
    lo: Optional[Decimal] = None
    hi: Optional[Decimal] = None
    lo_strict = hi_strict = False
    divisors: list[tuple[Decimal, str]] = []
    for s in subs:
        sch = s.schema
        for kw, strict, is_lo in (("minimum", False, True), ("exclusiveMinimum", True, True),
                                  ("maximum", False, False), ("exclusiveMaximum", True, False)):
            if kw not in sch or isinstance(sch[kw], bool):
                continue
            v = Decimal(str(sch[kw]))
            if is_lo and (lo is None or v > lo or (v == lo and strict)):
                lo, lo_strict = v, strict
            if not is_lo and (hi is None or v < hi or (v == hi and strict)):
                hi, hi_strict = v, strict
        if "multipleOf" in sch:
            divisors.append((Decimal(str(sch["multipleOf"])), child(s.pointer, "multipleOf")))
        if sch.get("format") in formats.INTEGER_FORMATS:  # int32 & co: integers in a range
            integer_only = True
            f_lo, f_hi = (Decimal(b) for b in formats.INTEGER_FORMATS[sch["format"]])
            if lo is None or f_lo > lo:
                lo, lo_strict = f_lo, False
            if hi is None or f_hi < hi:
                hi, hi_strict = f_hi, False
    step, scale = multiples.combined_divisor([d for d, _ in divisors]) if divisors else (1, 0)
    where = divisors[0][1] if divisors else ""
    if divisors or integer_only:
        if scale and not integer_only:
            pattern = numbers.number_range(lo, lo_strict, hi, hi_strict)
            if pattern is None:
                return NOTHING
            try:
                return And(regex(pattern), multiples.decimal_multiples(step, scale))
            except GrammarBudgetError as exc:
                lw.report("multipleOf", where, str(exc))
                return regex(pattern)
        return _lower_integer(lw, lo, lo_strict, hi, hi_strict,
                              multiples.integer_divisor(step, scale), where)
    pattern = numbers.number_range(lo, lo_strict, hi, hi_strict)
    return NOTHING if pattern is None else lw.leaf(pattern)


def _lower_integer(lw: "Lowerer", lo: Optional[Decimal], lo_strict: bool,
                   hi: Optional[Decimal], hi_strict: bool, k: int, where: str) -> Node:
    ilo = None if lo is None else (math.floor(lo) + 1 if lo_strict else math.ceil(lo))
    ihi = None if hi is None else (math.ceil(hi) - 1 if hi_strict else math.floor(hi))
    pattern = numbers.integer_range(ilo, ihi)
    if pattern is None:
        return NOTHING
    if k == 1:
        return lw.leaf(pattern)
    if ilo is not None and ihi is not None:
        values = multiples.enumerate_multiples(ilo, ihi, k)
        if values is not None:
            return alt(*(lit(str(v)) for v in values))
    node = regex(pattern)
    try:
        parts = multiples.multiple_of_integer(k)
    except GrammarBudgetError as exc:
        lw.report("multipleOf", where, str(exc))
        return node
    for p in parts:
        node = And(node, regex(p))
    return node


def lower_string(lw: "Lowerer", subs: list[Sub]) -> Node:
    min_len, max_len = 0, None
    content: Optional[Node] = None
    for s in subs:
        sch = s.schema
        min_len = max(min_len, int(sch.get("minLength", 0)))
        if "maxLength" in sch:
            m = int(sch["maxLength"])
            max_len = m if max_len is None else min(max_len, m)
        extra = []
        if "pattern" in sch:
            try:
                extra.append(lw.pattern_node(sch["pattern"], "pattern",
                                             child(s.pointer, "pattern"), encoded=True))
            except UnsupportedSchemaError as exc:
                lw.report(exc.keyword, exc.pointer, exc.reason)
        if "format" in sch:
            fmt = sch["format"]
            if fmt in formats.SUPPORTED:  # others: number formats, or unknown (a warning)
                extra.append(encoded_format(fmt))
            if fmt == "hostname":  # its language bounds the labels; the whole name is bounded here
                max_len = formats.HOSTNAME_MAX_LENGTH if max_len is None else min(max_len, formats.HOSTNAME_MAX_LENGTH)
        for node in extra:
            content = node if content is None else And(content, node)
    if max_len is not None and max_len < min_len:
        return NOTHING
    if content is None:
        return lw.leaf(("string", min_len, max_len))
    if min_len or max_len is not None:
        content = And(content, string_content(min_len, max_len, canonical=True))
    return quoted(content)
