"""JSON string languages of `grammar/json_schema/strings.py`, checked on compiled byte DFAs:
the key language of open objects ("any canonical string except the declared names")."""
import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from formwork.grammar.json_schema.automata import SHARED, accepts
from formwork.grammar.ir import And
from formwork.grammar.json_schema.strings import canonical_content_except

# printable ASCII (the trie path) plus characters that force the complement fallback
_TRIE_CHARS = "ab_ ~!#z"
_NAMES = st.lists(st.text(_TRIE_CHARS, max_size=4), max_size=6)
_VALUES = st.text(_TRIE_CHARS + '"\\\n\x01\x7fé€😀', max_size=5)


def _spelling(value: str) -> bytes:
    return json.dumps(value, ensure_ascii=False)[1:-1].encode("utf-8")


@settings(deadline=None, max_examples=60)
@given(_NAMES, st.lists(_VALUES, max_size=8))
@example(["ab", "a", ""], ["", "a", "ab", "abc", "b", "a\n", "é"])
@example([], ["", "a"])
@example(["description", "descriptions", "id"], ["descriptio", "descriptionsx", "i", "idd"])
@example([chr(c) for c in range(0x20, 0x7F) if c not in (0x22, 0x5C)], ["a", "\x7f", "é", '"', "aa"])
def test_key_language_is_every_canonical_spelling_but_the_names(names, values):
    dfa = SHARED.compile(canonical_content_except(names))
    for value in values + names:
        assert accepts(dfa, _spelling(value)) == (value not in names), (names, value)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.text(_TRIE_CHARS + '"\\é\n', max_size=3), min_size=1, max_size=4), _VALUES)
def test_names_outside_the_trie_alphabet_use_the_complement(names, value):
    dfa = SHARED.compile(canonical_content_except(names))
    assert accepts(dfa, _spelling(value)) == (value not in names)


def test_only_canonical_escapes_are_accepted():
    dfa = SHARED.compile(canonical_content_except(["a"]))
    for good in (b'\\"', b"\\\\", b"\\n", b"\\u001f", b"\x7f", b"b"):
        assert accepts(dfa, good), good
    for bad in (b"\\/", b"\\u0041", b"\\u001F", b"\\u00e9", b"\n", b"a"):
        assert not accepts(dfa, bad), bad


def _plain(name: str) -> bool:
    """The names the trie spells: printable ASCII without quote or backslash."""
    return name.isascii() and name.isprintable() and '"' not in name and "\\" not in name


@settings(deadline=None, max_examples=200)
@given(st.lists(st.text(st.characters(max_codepoint=0x3000), max_size=4), max_size=5))
@example(["a", "b\x7f"])
@example(["a\x1f", "b"])
@example([" !#[]~"])
@example([])
def test_the_trie_is_taken_exactly_for_plain_names(names):
    # the complement fallback is the only path that builds an intersection at the top
    assert isinstance(canonical_content_except(names), And) == (not all(map(_plain, names)))
