"""Unicode property escapes of regular expressions (`\\p{Lu}`, `\\P{Letter}`, `\\p{gc=Nd}`) as code ranges.

General categories come from Python's `unicodedata` (its Unicode version: `unicodedata.unidata_version`),
one pass over every code point the first time any category is asked for, then cached.  Supported names:
the one- and two-letter categories and their long aliases (`L`/`Letter`, `Lu`/`Uppercase_Letter`, ...,
`LC`/`Cased_Letter`), optionally written `gc=`/`General_Category=`, and the binary properties `Any`,
`ASCII` and `Assigned`.  Scripts (`Script=Greek`, `sc=`, `scx=`) and other binary properties are not
in `unicodedata`; `property_ranges` returns None for them and the parser refuses them by name.
"""
from __future__ import annotations

import threading
import unicodedata

CodeRanges = list[tuple[int, int]]

_LONG_NAMES = {
    "Letter": "L", "Cased_Letter": "LC", "Uppercase_Letter": "Lu", "Lowercase_Letter": "Ll",
    "Titlecase_Letter": "Lt", "Modifier_Letter": "Lm", "Other_Letter": "Lo",
    "Mark": "M", "Combining_Mark": "M", "Nonspacing_Mark": "Mn", "Spacing_Mark": "Mc", "Enclosing_Mark": "Me",
    "Number": "N", "Decimal_Number": "Nd", "digit": "Nd", "Letter_Number": "Nl", "Other_Number": "No",
    "Punctuation": "P", "punct": "P", "Connector_Punctuation": "Pc", "Dash_Punctuation": "Pd",
    "Open_Punctuation": "Ps", "Close_Punctuation": "Pe", "Initial_Punctuation": "Pi",
    "Final_Punctuation": "Pf", "Other_Punctuation": "Po",
    "Symbol": "S", "Math_Symbol": "Sm", "Currency_Symbol": "Sc", "Modifier_Symbol": "Sk", "Other_Symbol": "So",
    "Separator": "Z", "Space_Separator": "Zs", "Line_Separator": "Zl", "Paragraph_Separator": "Zp",
    "Other": "C", "Control": "Cc", "cntrl": "Cc", "Format": "Cf", "Surrogate": "Cs", "Private_Use": "Co",
    "Unassigned": "Cn",
}
_GROUPS = {"L": "LuLlLtLmLo", "LC": "LuLlLt", "M": "MnMcMe", "N": "NdNlNo", "P": "PcPdPsPePiPfPo",
           "S": "SmScSkSo", "Z": "ZsZlZp", "C": "CcCfCsCoCn"}
_BINARY = {"Any": [(0, 0x10FFFF)], "ASCII": [(0, 0x7F)]}

_categories: dict[str, CodeRanges] | None = None
_lock = threading.Lock()


def _all_categories() -> dict[str, CodeRanges]:
    """Code ranges of every two-letter general category (one pass over the code points)."""
    global _categories
    with _lock:
        if _categories is None:
            found: dict[str, CodeRanges] = {}
            category = unicodedata.category
            run_start, run_cat = 0, category("\x00")
            for cp in range(1, 0x110000):
                cat = category(chr(cp))
                if cat != run_cat:
                    found.setdefault(run_cat, []).append((run_start, cp - 1))
                    run_start, run_cat = cp, cat
            found.setdefault(run_cat, []).append((run_start, 0x10FFFF))
            _categories = found
        return _categories


def warm_categories() -> None:
    """Build the category table now (one pass over the code points, ~0.2 s CPU) rather than in the
    first compile of a pattern with a `\\p{..}` escape."""
    _all_categories()


def _merged(ranges: CodeRanges) -> CodeRanges:
    out: CodeRanges = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _category_ranges(short: str) -> CodeRanges:
    categories = _all_categories()
    members = _GROUPS.get(short, short)
    return _merged([r for i in range(0, len(members), 2) for r in categories.get(members[i:i + 2], [])])


def property_ranges(name: str) -> CodeRanges | None:
    """The code ranges of the property written inside `\\p{...}`, or None if it is not supported."""
    key, _, value = name.partition("=")
    if value:
        if key not in ("gc", "General_Category"):
            return None
        name = value
    if not value and name in _BINARY:
        return list(_BINARY[name])
    if not value and name == "Assigned":
        return _merged([r for cat, ranges in _all_categories().items() if cat != "Cn" for r in ranges])
    short = _LONG_NAMES.get(name, name)
    if short in _GROUPS or (len(short) == 2 and short[0] in _GROUPS and short in _all_categories()):
        return _category_ranges(short)
    return None
