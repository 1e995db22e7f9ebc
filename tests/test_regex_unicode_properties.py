"""Unicode property escapes in patterns (`\\p{Lu}`, `\\P{L}`, `[\\p{L}\\p{Nd}_]`, `\\p{gc=Cc}`): the
compiled language agrees with `unicodedata`'s general categories (and the `regex` package's
`\\p{..}` on code points both agree on); scripts stay refused by name."""
import json
import re
import sys
import unicodedata
from pathlib import Path

import pytest
import regex as regex_package
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar.errors import RegexSyntaxError, UnsupportedRegexError  # noqa: E402
from formwork.grammar.json_schema import UnsupportedSchemaError, compile_json_schema  # noqa: E402
from formwork.grammar.json_schema.automata import SHARED, accepts  # noqa: E402
from formwork.grammar.regex_parser import regex  # noqa: E402
from formwork.grammar.unicode_properties import property_ranges  # noqa: E402
from formwork.schemas.keywords import regex_problem  # noqa: E402

NAMES = ["L", "Lu", "Ll", "Letter", "N", "Nd", "P", "S", "Z", "Zs", "C", "Cc", "Control", "LC", "M", "Mn",
         "gc=Lu", "General_Category=Decimal_Number", "Any", "ASCII", "Assigned", "punct", "Cn"]
characters = st.characters(exclude_categories=("Cs",))


def _in_property(name: str, ch: str) -> bool:
    cat = unicodedata.category(ch)
    short = {"Letter": "L", "Control": "Cc", "punct": "P", "gc=Lu": "Lu",
             "General_Category=Decimal_Number": "Nd"}.get(name, name)
    if short == "Any":
        return True
    if short == "ASCII":
        return ord(ch) < 0x80
    if short == "Assigned":
        return cat != "Cn"
    if short == "LC":
        return cat in ("Lu", "Ll", "Lt")
    return cat.startswith(short) if len(short) == 1 else cat == short


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(NAMES), characters, st.booleans())
def test_property_escape_matches_unicodedata(name: str, ch: str, negated: bool) -> None:
    letter = "P" if negated else "p"
    dfa = SHARED.compile(regex(f"\\{letter}{{{name}}}"))
    assert accepts(dfa, ch.encode()) == (_in_property(name, ch) != negated), (name, ch, unicodedata.category(ch))


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=characters, max_size=6))
def test_classes_with_properties_agree_with_the_regex_package(text: str) -> None:
    pattern = r"^[\p{Lu}\p{Nd}_-][\p{Ll}\P{L}]*$"
    dfa = SHARED.compile(regex(pattern, search=True))
    assigned = all(unicodedata.category(c) != "Cn" for c in text)  # the packages' Unicode versions differ there
    if assigned and all(ord(c) < 0x30000 for c in text):
        assert accepts(dfa, text.encode()) == (regex_package.search(pattern, text) is not None), text


def test_json_schema_pattern_with_property_escapes() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": r"^\p{Lu}\p{Ll}+$"}},
              "required": ["name"], "additionalProperties": False}
    grammar = compile_json_schema(schema, byte_vocab())
    for name, ok in [("Émile", True), ("Ωmega", True), ("émile", False), ("E1", False), ("Ab c", False)]:
        assert grammar.matcher().accept_string(json.dumps({"name": name}, ensure_ascii=False)) == ok, name


def test_property_ranges_are_sorted_and_disjoint() -> None:
    for name in NAMES:
        ranges = property_ranges(name)
        assert ranges, name
        assert all(lo <= hi < nxt for (lo, hi), (nxt, _) in zip(ranges, ranges[1:])), name


@pytest.mark.parametrize("pattern, error, message", [
    (r"\p{Script=Greek}", UnsupportedRegexError, r"\p{Script=Greek} is not supported"),
    (r"\p{Greek}", UnsupportedRegexError, r"\p{Greek} is not supported"),
    (r"\pL", RegexSyntaxError, "needs braces"),
    (r"\p{L", RegexSyntaxError, "needs braces"),
])
def test_unsupported_properties_are_refused_by_name(pattern: str, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        regex(pattern)


def test_schema_with_a_script_property_is_refused_with_its_pointer() -> None:
    schema = {"properties": {"word": {"type": "string", "pattern": r"^\p{sc=Greek}+$"}}}
    with pytest.raises(UnsupportedSchemaError, match=r"/properties/word/pattern"):
        compile_json_schema(schema, byte_vocab())


def test_schema_check_accepts_property_escapes() -> None:
    assert regex_problem(r"^[\p{L}\p{N}]+$") is None
    assert regex_problem(r"\\p{L}") is None  # an escaped backslash, then literal text
    assert "supported regex syntax" in regex_problem(r"\cX")


def test_prepare_builds_the_category_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """`GrammarCompiler.prepare` makes the category table, so no schema's compile pays for it."""
    from formwork.grammar import unicode_properties
    from formwork.grammar.compiler import GrammarCompiler

    expected = unicode_properties._all_categories()
    monkeypatch.setattr(unicode_properties, "_categories", None)
    GrammarCompiler(byte_vocab()).prepare()
    assert unicode_properties._categories == expected
    assert property_ranges("Cc") == [(0, 0x1F), (0x7F, 0x9F)]
