"""Regular expressions for JSON numbers restricted to a range (multiples: `multiples.py`).

Every function returns a regex *string* in the common ECMAScript/Python subset (so it can be checked
with Python's ``re`` and parsed by :func:`formwork.grammar.regex_parser.regex`).  The spellings produced:

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


def class_for_digits(digits: list[int]) -> str:
    if len(digits) == 10:
        return "[0-9]"
    if len(digits) == 1:
        return str(digits[0])
    return "[" + "".join(str(d) for d in digits) + "]"


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


@lru_cache(maxsize=4096)
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
        cls = class_for_digits(digits)
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


@lru_cache(maxsize=4096)
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
