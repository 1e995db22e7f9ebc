"""Regular expressions for JSON numbers restricted to a range or to multiples of an integer.

Every function returns a regex *string* in the common ECMAScript/Python subset (so it can be checked
with Python's ``re`` and parsed by :func:`formwork.grammar.ir.regex`).  The spellings produced:

* integers: canonical JSON integers ``0``, ``[1-9][0-9]*``, ``-[1-9][0-9]*`` (no ``-0``, no exponent,
  no ``1.0``);
* bounded numbers: ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` (any number of fraction digits, trailing zeros
  allowed, no exponent and no negative zero);
* unbounded numbers: the full JSON number syntax including exponents.

Comparisons are exact: bounds are :class:`decimal.Decimal` values and the regexes compare digit strings.
"""
from __future__ import annotations

from decimal import Decimal
from functools import lru_cache
from typing import Optional

from formwork.grammar.errors import GrammarBudgetError

JSON_INTEGER = r"(?:0|-?[1-9][0-9]*)"
JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"



def _digit_class(lo: int, hi: int) -> str:
    """A class for the digits lo..hi (inclusive); '' when empty."""
    if lo > hi:
        return ""
    if lo == hi:
        return str(lo)
    if lo == 0 and hi == 9:
        return "[0-9]"
    return f"[{lo}-{hi}]"


def _alt(parts: list[str]) -> Optional[str]:
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    uniq = list(dict.fromkeys(parts))
    return uniq[0] if len(uniq) == 1 else "(?:" + "|".join(uniq) + ")"


# --------------------------------------------------------------------------- integers

def _same_length_range(lo: str, hi: str) -> str:
    """Digit strings of len(lo) == len(hi) whose value is in [lo, hi] (leading zeros allowed)."""
    n = len(lo)
    if n == 0:
        return ""
    if lo == "0" * n and hi == "9" * n:
        return f"[0-9]{{{n}}}" if n > 1 else "[0-9]"
    if lo[0] == hi[0]:
        return lo[0] + _same_length_range(lo[1:], hi[1:])
    rest = n - 1
    parts = [lo[0] + _same_length_range(lo[1:], "9" * rest)]
    mid = _digit_class(int(lo[0]) + 1, int(hi[0]) - 1)
    if mid:
        parts.append(mid + (f"[0-9]{{{rest}}}" if rest > 1 else "[0-9]" if rest == 1 else ""))
    parts.append(hi[0] + _same_length_range("0" * rest, hi[1:]))
    return _alt(parts) or ""


def _natural_range(lo: int, hi: Optional[int]) -> Optional[str]:
    """Canonical spellings of naturals n with lo <= n <= hi (hi None: unbounded)."""
    if hi is not None and lo > hi:
        return None
    parts: list[str] = []
    if lo == 0:
        parts.append("0")
        lo = 1
        if hi is not None and hi < 1:
            return _alt(parts)
    lo_len = len(str(lo))
    max_len = len(str(hi)) if hi is not None else lo_len
    for length in range(lo_len, max_len + 1):
        a = max(lo, 10 ** (length - 1))
        b = 10 ** length - 1 if hi is None else min(hi, 10 ** length - 1)
        if a <= b:
            parts.append(_same_length_range(str(a), str(b)))
    if hi is None:
        parts.append(f"[1-9][0-9]{{{lo_len},}}")
    return _alt(parts)


def integer_range(lo: Optional[int], hi: Optional[int]) -> Optional[str]:
    """Canonical JSON integers in [lo, hi] (None bounds are open); None when the range is empty."""
    if lo is None and hi is None:
        return JSON_INTEGER
    if lo is not None and hi is not None and lo > hi:
        return None
    parts: list[Optional[str]] = []
    if hi is None or hi >= 0:
        parts.append(_natural_range(max(lo, 0) if lo is not None else 0, hi))
    if lo is None or lo < 0:
        neg_lo = max(-hi, 1) if hi is not None else 1
        neg_hi = -lo if lo is not None else None
        body = _natural_range(neg_lo, neg_hi)
        if body is not None:
            parts.append("-" + body)
    return _alt([p for p in parts if p is not None])


# --------------------------------------------------------------------------- fractions
# A fraction is the digit string D after the decimal point (value 0.D, shorter strings padded with
# zeros).  The helpers return regexes for *non-empty* D and say separately whether "no fraction"
# (value 0) qualifies.


def _frac(lo: Optional[str], lo_strict: bool, hi: Optional[str], hi_strict: bool
          ) -> tuple[Optional[str], bool]:
    """Fractions D between the digit strings lo and hi (None: unbounded on that side).

    Returns a regex for the non-empty D with lo <(=) 0.D <(=) hi, and whether the empty fraction
    (value 0) qualifies.  lo and hi have their trailing zeros stripped.
    """
    return _frac_memo(lo, lo_strict, hi, hi_strict)


@lru_cache(maxsize=4096)
def _frac_memo(lo, lo_strict, hi, hi_strict):
    empty_ok = (lo is None or (lo == "" and not lo_strict)) and \
        (hi is None or hi != "" or not hi_strict)
    if lo is None and hi is None:
        return "[0-9]+", True
    if lo == "" and hi is None:
        return ("0*[1-9][0-9]*", False) if lo_strict else ("[0-9]+", True)
    if hi == "" and (lo is None or lo == ""):
        ok = not hi_strict and (lo is None or not lo_strict)
        return ("0+", True) if ok else (None, False)
    groups: dict[tuple, list[int]] = {}
    for c in range(10):
        if lo is None:
            nlo = None
        elif lo == "":
            nlo = None if c > 0 else ""
        else:
            d = int(lo[0])
            if c < d:
                continue
            nlo = None if c > d else lo[1:]
        if hi is None:
            nhi = None
        elif hi == "":
            if c > 0:
                continue
            nhi = ""
        else:
            d = int(hi[0])
            if c > d:
                continue
            nhi = None if c < d else hi[1:]
        groups.setdefault((nlo, nhi), []).append(c)
    parts = []
    for (nlo, nhi), digits in groups.items():
        sub, sub_empty = _frac_memo(nlo, lo_strict, nhi, hi_strict)
        cls = _class_for(digits)
        if sub is not None and sub_empty:
            parts.append(f"{cls}(?:{sub})?")
        elif sub is not None:
            parts.append(cls + sub)
        elif sub_empty:
            parts.append(cls)
    return _alt(parts), empty_ok


def _with_fraction(int_part: str, frac: tuple[Optional[str], bool]) -> Optional[str]:
    d, empty = frac
    if d is None:
        return int_part if empty else None
    return int_part + (r"(?:\.%s)?" % d if empty else r"\.%s" % d)


def _split(value: Decimal) -> tuple[int, str]:
    """A non-negative decimal as (integer part, fraction digits)."""
    text = format(value, "f")
    if "." in text:
        ip, fp = text.split(".")
    else:
        ip, fp = text, ""
    return int(ip), fp.rstrip("0")


def _magnitude_range(lo: Decimal, lo_strict: bool, hi: Optional[Decimal], hi_strict: bool
                     ) -> Optional[str]:
    """Non-negative spellings ``(0|[1-9]\\d*)(\\.\\d+)?`` with value in the interval (0 <= lo)."""
    a_int, a_frac = _split(lo)
    if hi is None:
        parts = [_with_fraction(str(a_int), _frac(a_frac, lo_strict, None, False))]
        rest = _natural_range(a_int + 1, None)
        if rest is not None:
            parts.append(rest + r"(?:\.[0-9]+)?")
        return _alt([p for p in parts if p is not None])
    if hi < lo or (hi == lo and (lo_strict or hi_strict)):
        return None
    b_int, b_frac = _split(hi)
    if a_int == b_int:
        return _with_fraction(str(a_int), _frac(a_frac, lo_strict, b_frac, hi_strict))
    parts = [_with_fraction(str(a_int), _frac(a_frac, lo_strict, None, False))]
    if b_int - a_int >= 2:
        mid = _natural_range(a_int + 1, b_int - 1)
        if mid is not None:
            parts.append(mid + r"(?:\.[0-9]+)?")
    parts.append(_with_fraction(str(b_int), _frac(None, False, b_frac, hi_strict)))
    return _alt([p for p in parts if p is not None])


def number_range(lo: Optional[Decimal], lo_strict: bool, hi: Optional[Decimal], hi_strict: bool
                 ) -> Optional[str]:
    """JSON numbers (no exponent, no negative zero) in the interval; None when it is empty.

    With both bounds open the full JSON number syntax (exponents included) is returned.
    """
    if lo is None and hi is None:
        return JSON_NUMBER
    parts: list[Optional[str]] = []
    zero = Decimal(0)
    # x >= 0 part
    if hi is None or hi > zero or (hi == zero and not hi_strict):
        if lo is None or lo < zero:
            parts.append(_magnitude_range(zero, False, hi, hi_strict))
        else:
            parts.append(_magnitude_range(lo, lo_strict, hi, hi_strict))
    # x < 0 part: magnitude m = -x > 0
    if lo is None or lo < zero:
        if hi is None or hi >= zero:
            m = _magnitude_range(zero, True, None if lo is None else -lo, lo_strict)
        else:
            m = _magnitude_range(-hi, hi_strict, None if lo is None else -lo, lo_strict)
        if m is not None:
            parts.append("-" + m)
    return _alt([p for p in parts if p is not None])


# --------------------------------------------------------------------------- multipleOf

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


def _class_for(digits: list[int]) -> str:
    if len(digits) == 10:
        return "[0-9]"
    if len(digits) == 1:
        return str(digits[0])
    return "[" + "".join(str(d) for d in digits) + "]"


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
    parts = [_class_for(sorted(heads)) + tail for tail, heads in by_tail.items()]
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
        cls = _class_for(digits)
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
