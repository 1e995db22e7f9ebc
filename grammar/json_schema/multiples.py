"""Regular languages of JSON numbers that are multiples of a `multipleOf` divisor.

Integers: k splits into a 2^a 5^b part (decided by the last digits) and a part coprime to 10 (a
residue automaton over the digits, turned into a regex by state elimination); both are budgeted,
and past the budget a `GrammarBudgetError` says so.

Decimal divisors are exact over the decimal spellings (no float rounding): the divisors of a
conjunction combine into their least common multiple P / 10^J (`combined_divisor`), and a spelling
d = N / 10^t (t fraction digits) is a multiple iff its digits beyond the J-th fraction digit are
zeros and the digits up to there, read as an integer, are divisible by P / gcd(P, 10^(J - t))
(`decimal_multiples`).  The divisor is the schema's decimal spelling (0.1 is 1/10, not the binary
float nearest to it): jsonschema divides floats, and where its rounding disagrees (0.3 under
multipleOf 0.1: 0.3 / 0.1 == 2.9999999999999996) formwork follows the exact quotient, as the
specification and the JSON Schema Test Suite do.  Multiples are spelled without an exponent.
"""
from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Optional

from formwork.grammar.errors import GrammarBudgetError
from formwork.grammar.ir import And, Node, alt, seq
from formwork.grammar.regex_parser import regex
from formwork.grammar.json_schema.numbers import JSON_INTEGER, class_for_digits

MAX_MODULUS = 64


def _residue_dfa(k: int) -> tuple[list[list[int]], int]:
    """Minimal DFA over digits for 'digit string value is divisible by k'; returns (delta, start)."""
    delta = [[(10 * r + d) % k for d in range(10)] for r in range(k)]
    # Moore minimisation: accepting = {0}
    block = [0 if r == 0 else 1 for r in range(k)]
    while True:
        sig = {}
        new_block = []
        for r in range(k):
            key = (block[r], tuple(block[delta[r][d]] for d in range(10)))
            new_block.append(sig.setdefault(key, len(sig)))
        if len(sig) == len(set(block)):
            block = new_block
            break
        block = new_block
    n = max(block) + 1
    mdelta = [[0] * 10 for _ in range(n)]
    for r in range(k):
        for d in range(10):
            mdelta[block[r]][d] = block[delta[r][d]]
    return mdelta, block[0]


def _eliminate(n: int, edges: dict[tuple[int, int], str], start: int, accept: int) -> Optional[str]:
    """State elimination: regex for paths start -> accept (states 0..n-1 plus the two ends)."""
    inner = [s for s in range(n) if s not in (start, accept)]

    def star(x: str) -> str:
        return f"(?:{x})*"

    for s in inner:
        loop = edges.pop((s, s), None)
        ins = [(p, r) for (p, q), r in edges.items() if q == s and p != s]
        outs = [(q, r) for (p, q), r in edges.items() if p == s and q != s]
        for p, _ in ins:
            del edges[(p, s)]
        for q, _ in outs:
            del edges[(s, q)]
        mid = star(loop) if loop else ""
        for p, r_in in ins:
            for q, r_out in outs:
                new = f"(?:{r_in}){mid}(?:{r_out})"
                old = edges.get((p, q))
                edges[(p, q)] = f"{old}|{new}" if old else new
        if sum(len(v) for v in edges.values()) > MAX_REGEX_CHARS:
            raise GrammarBudgetError("multipleOf: the divisibility automaton is too large to lower")
    return edges.get((start, accept))


MAX_REGEX_CHARS = 20_000
MAX_SUFFIXES = 1000


def _trie_regex(words: list[str]) -> str:
    """A compact regex matching exactly the given (equal-length) digit strings."""
    if len(words) == 1:
        return words[0]
    if all(w == "" for w in words):
        return ""
    groups: dict[str, list[str]] = {}
    for w in words:
        groups.setdefault(w[0], []).append(w[1:])
    by_tail: dict[str, list[int]] = {}
    for head, tails in groups.items():
        by_tail.setdefault(_trie_regex(sorted(set(tails))), []).append(int(head))
    parts = [class_for_digits(sorted(heads)) + tail for tail, heads in by_tail.items()]
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _split_modulus(k: int) -> tuple[int, int, int]:
    """k = k1 * k2 with k1 = 2^a 5^b and gcd(k2, 10) = 1; returns (k1, t = max(a, b), k2)."""
    a = b = 0
    while k % 2 == 0:
        k //= 2
        a += 1
    while k % 5 == 0:
        k //= 5
        b += 1
    return 2 ** a * 5 ** b, max(a, b), k


def _multiple_of_power_part(k1: int, t: int) -> str:
    """Canonical integers divisible by k1 = 2^a 5^b: decided by their last t digits."""
    count = (10 ** t) // k1
    if count > MAX_SUFFIXES:
        raise GrammarBudgetError(f"multipleOf {k1}: too many residue suffixes ({count})")
    suffixes = [str(m).zfill(t) for m in range(0, 10 ** t, k1)]
    short = [str(m) for m in range(k1, 10 ** t, k1)]  # positive multiples with at most t digits
    by_len: dict[int, list[str]] = {}
    for s in short:
        by_len.setdefault(len(s), []).append(s)
    alts = [_trie_regex(ws) for ws in by_len.values()]
    alts.append("[1-9][0-9]*" + _trie_regex(suffixes))
    return "(?:0|-?(?:" + "|".join(alts) + "))"


def _multiple_of_coprime_part(k: int) -> str:
    """Canonical integers divisible by k (gcd(k, 10) = 1) via state elimination on residues."""
    delta, start = _residue_dfa(k)
    n = len(delta)
    S, F = n, n + 1
    edges: dict[tuple[int, int], str] = {}

    def add(p: int, q: int, digits: list[int]) -> None:
        cls = class_for_digits(digits)
        edges[(p, q)] = f"{edges[(p, q)]}|{cls}" if (p, q) in edges else cls

    for q in range(n):
        ds = [d for d in range(1, 10) if delta[start][d] == q]
        if ds:
            add(S, q, ds)
    for p in range(n):
        by_target: dict[int, list[int]] = {}
        for d in range(10):
            by_target.setdefault(delta[p][d], []).append(d)
        for q, ds in by_target.items():
            add(p, q, ds)
    edges[(start, F)] = ""  # the residue-0 class accepts
    positive = _eliminate(n + 2, edges, S, F)
    return f"(?:0|-?(?:{positive}))"


def multiple_of_integer(k: int) -> list[str]:
    """Regexes whose intersection is the canonical JSON integers divisible by k (k >= 1).

    k splits into a 2^a 5^b part (a condition on the last digits) and a part coprime to 10 (a
    residue automaton turned into a regex by state elimination); each is budgeted.
    """
    if k <= 0:
        raise ValueError("multipleOf must be positive")
    k1, t, k2 = _split_modulus(k)
    parts = []
    if k1 > 1:
        parts.append(_multiple_of_power_part(k1, t))
    if k2 > 1:
        if k2 > MAX_MODULUS:
            raise GrammarBudgetError(
                f"multipleOf {k}: factor {k2} exceeds the residue budget ({MAX_MODULUS})")
        parts.append(_multiple_of_coprime_part(k2))
    if sum(len(p) for p in parts) > MAX_REGEX_CHARS:
        raise GrammarBudgetError(f"multipleOf {k}: the divisibility regex is too large")
    return parts or [JSON_INTEGER]


def enumerate_multiples(lo: int, hi: int, k: int, limit: int = 2048) -> Optional[list[int]]:
    """The multiples of k in [lo, hi] when there are at most ``limit`` of them, else None."""
    first = -((-lo) // k) * k
    if first > hi:
        return []
    count = (hi - first) // k + 1
    if count > limit:
        return None
    return list(range(first, hi + 1, k))


def combined_divisor(divisors: list[Decimal]) -> tuple[int, int]:
    """The least common multiple of positive decimal divisors as (P, J): the lcm is P / 10^J."""
    fractions = [Fraction(d) for d in divisors]
    numerator = math.lcm(*(f.numerator for f in fractions))
    denominator = math.gcd(*(f.denominator for f in fractions))
    scale = 0
    while 10 ** scale % denominator:
        scale += 1
    return numerator * (10 ** scale // denominator), scale


def integer_divisor(step: int, scale: int) -> int:
    """The k such that an integer is a multiple of step / 10^scale iff it is a multiple of k."""
    return step // math.gcd(step, 10 ** scale)


def _digits_divisible(k: int) -> str:
    """A regex of digit strings, with '.' anywhere ignored, whose digits read as an integer are
    divisible by k (leading zeros allowed)."""
    if k > MAX_MODULUS:
        raise GrammarBudgetError(f"multipleOf: divisibility by {k} needs a residue automaton "
                                 f"above the budget of {MAX_MODULUS} states")
    delta, start = _residue_dfa(k)
    n = len(delta)
    first, last = n, n + 1
    edges: dict[tuple[int, int], str] = {}
    for p, row in [(first, delta[start])] + list(enumerate(delta)):
        by_target: dict[int, list[int]] = {}
        for d in range(10):
            by_target.setdefault(row[d], []).append(d)
        for q, ds in by_target.items():
            digits = "".join(map(str, ds)) + ("." if p == q else "")
            edges[(p, q)] = "[" + digits.replace(".", "\\.") + "]"
        if p != first and p not in by_target:
            edges[(p, p)] = "\\."
    edges[(start, last)] = ""
    body = _eliminate(n + 2, edges, first, last)
    return f"(?:{body})"


_INTEGER_PART = "-?(?:0|[1-9][0-9]*)"


def decimal_multiples(step: int, scale: int) -> Node:
    """JSON numbers without exponent that are exact multiples of step / 10^scale (scale >= 1)."""
    groups: dict[int, list[int]] = {}  # divisor of the digits -> fraction lengths t < scale
    for t in range(scale):
        groups.setdefault(step // math.gcd(step, 10 ** (scale - t)), []).append(t)
    parts = []
    for k, lengths in groups.items():
        lo, hi = lengths[0], lengths[-1]
        shape = _INTEGER_PART if hi == 0 else \
            f"{_INTEGER_PART}(?:\\.[0-9]{{{max(lo, 1)},{hi}}})" + ("?" if lo == 0 else "")
        parts.append(_divisible(shape, k))
    full = _divisible(f"{_INTEGER_PART}\\.[0-9]{{{scale}}}", step)
    parts.append(seq(full, regex("0*")))
    return alt(*parts)


def _power_digits_divisible(k1: int, t: int) -> str:
    """`_digits_divisible` for k1 = 2^a 5^b (t = max(a, b)): decided by the last t digits."""
    if 10 ** t // k1 > MAX_SUFFIXES:
        raise GrammarBudgetError(f"multipleOf: divisibility by {k1} needs {10 ** t // k1} digit "
                                 f"suffixes, above the budget of {MAX_SUFFIXES}")
    def dotted(words: list[str]) -> str:  # a '.' may sit between any two digits
        return "|".join("\\.?".join(w) for w in words)

    last = dotted([str(m).zfill(t) for m in range(0, 10 ** t, k1)])
    alternatives = [f"[0-9.]*(?:{last})"]  # t digits or more: the last t decide
    alternatives += [dotted([str(m).zfill(n) for m in range(0, 10 ** n, k1)]) for n in range(1, t)]
    return "(?:" + "|".join(alternatives) + ")"


def _divisible(shape: str, k: int) -> Node:
    """`shape` (a regex of spellings) whose digits, read as an integer, are divisible by k."""
    node = regex(shape)
    k1, t, k2 = _split_modulus(k)
    if k1 > 1:
        node = And(node, regex("-?" + _power_digits_divisible(k1, t)))
    if k2 > 1:
        node = And(node, regex("-?" + _digits_divisible(k2)))
    return node
