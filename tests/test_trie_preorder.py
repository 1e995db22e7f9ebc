"""The walk layout (`_trie_walk.layout`: the trie in preorder, where the native walk runs, with the
level-order arrays it reports in) against the level-order trie it is built from: on random
vocabularies, the real 129k one, and malformed arrays and layouts."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_vocab, node_prefixes  # noqa: E402

from formwork.grammar import Vocabulary  # noqa: E402
from formwork.grammar._trie_walk import layout, walk as raw_walk  # noqa: E402
from formwork.grammar.automaton import AutomatonBuilder  # noqa: E402
from formwork.grammar.dfa import START  # noqa: E402
from formwork.grammar.ir import lit  # noqa: E402
from formwork.grammar.native_walk import walk_state  # noqa: E402
from formwork.grammar.packed import unpack_token_ids  # noqa: E402


FIELDS = ["byte", "end_ptr", "end_tokens", "pre_next", "pre_code", "pre_token", "node_of_pre", "pre_of_node",
          "pre_child_lo", "pre_child_hi"]
MAGIC = 0x54524945


def read_layout(raw: bytes) -> dict[str, np.ndarray]:
    """The arrays of a layout buffer, by the header the C code writes: magic, root, number of token
    ends, then each array's offset in int32 words."""
    words = np.frombuffer(raw, dtype=np.int32)
    assert words[0] == MAGIC
    root, num_end = int(words[1]), int(words[2])
    sizes = {"byte": (root + 3) // 4, "end_tokens": num_end}
    out = {}
    for i, name in enumerate(FIELDS):
        at = int(words[3 + i])
        out[name] = words[at: at + sizes.get(name, root + 1)]
    out["byte"] = out["byte"].view(np.uint8)[:root]
    out["pre_code"] = out["pre_code"].view(np.uint32)
    return out


def _check_preorder(vocab: Vocabulary) -> None:
    """Every preorder field agrees with the level-order trie: the maps are inverse, positions
    follow the lexicographic order of the nodes' byte strings, a subtree ends where the next
    string that does not extend the node begins, and tokens and depths are the node's own."""
    trie = vocab.trie
    child_lo, child_hi, byte, end_ptr, end_tokens = trie.flat_arrays
    got = read_layout(trie.walk_layout)
    assert all(np.array_equal(got[name], array) for name, array in
               [("byte", byte), ("end_ptr", end_ptr), ("end_tokens", end_tokens)])
    pre_next, pre_code, pre_token, node_of_pre, pre_of_node, pre_child_lo, pre_child_hi = (
        got[name] for name in FIELDS[3:])
    n = trie.num_nodes
    assert node_of_pre[0] == n and pre_of_node[n] == 0 and pre_code[0] == 0 and pre_next[0] == n + 1
    assert (pre_of_node[node_of_pre] == np.arange(n + 1)).all()
    assert (pre_child_lo == child_lo[node_of_pre]).all() and (pre_child_hi == child_hi[node_of_pre]).all()
    prefixes = node_prefixes(trie)  # global node -> its bytes
    spelled = [prefixes[int(node)] for node in node_of_pre[1:]]
    assert spelled == sorted(spelled)  # preorder of a trie is lexicographic order
    for p in range(1, n + 1):
        text = spelled[p - 1]
        assert pre_code[p] >> 8 == len(text) and pre_code[p] & 0xFF == text[-1]
        below = pre_next[p]
        assert all(s.startswith(text) for s in spelled[p - 1: below - 1])
        assert below == n + 1 or not spelled[below - 1].startswith(text)
        node = int(node_of_pre[p])
        ending = end_tokens[end_ptr[node]: end_ptr[node + 1]].tolist()
        assert pre_token[p] == (-1 if not ending else ending[0] if len(ending) == 1 else -2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6).map(lambda b: bytes(x % 5 + 97 for x in b)),
                min_size=1, max_size=60))
def test_preorder_agrees_with_the_level_order_trie(tokens):
    """Duplicated byte strings (several tokens at one node) included."""
    _check_preorder(Vocabulary(tokens))


def test_preorder_of_the_real_vocabulary():
    vocab = deepseek_vocab()
    trie = vocab.trie
    got = read_layout(trie.walk_layout)
    pre_next, pre_code, node_of_pre = got["pre_next"], got["pre_code"], got["node_of_pre"]
    depth = (pre_code >> 8).astype(np.int64)
    assert depth.max() == trie.max_depth
    # a node's subtree holds exactly the following positions that are deeper than it
    p = np.arange(1, trie.num_nodes + 1)
    has_children = pre_next[1:] > p + 1
    assert (depth[p[has_children] + 1] == depth[p[has_children]] + 1).all()
    assert (depth[pre_next[1:][pre_next[1:] <= trie.num_nodes]] <= depth[1:][pre_next[1:] <= trie.num_nodes]).all()
    assert np.array_equal(np.sort(node_of_pre), np.arange(trie.num_nodes + 1))


def test_malformed_tries_are_an_error_not_a_crash():
    child_lo, child_hi, byte, end_ptr, end_tokens = Vocabulary([b"ab", b"b"]).trie.flat_arrays
    with pytest.raises(ValueError, match="sizes"):
        layout(child_lo, child_hi[:-1], byte, end_ptr, end_tokens)
    cyclic = child_lo.copy()
    cyclic[0] = 0  # node 0's children start at node 0 itself
    with pytest.raises(ValueError, match="not a tree|out of range"):
        layout(cyclic, child_hi, byte, end_ptr, end_tokens)
    wide = child_hi.copy()
    wide[-1] = len(wide)  # the root's children run past the nodes
    with pytest.raises(ValueError, match="out of range"):
        layout(child_lo, wide, byte, end_ptr, end_tokens)
    orphan = child_hi.copy()
    orphan[-1] = child_lo[-1]  # the root has no children: its nodes are never reached
    with pytest.raises(ValueError, match="not reached"):
        layout(child_lo, orphan, byte, end_ptr, end_tokens)


def _walk_raw(raw_layout) -> None:
    dfa = AutomatonBuilder().eager(lit("ab"))
    rows, classes, expanded, accepting, _ = dfa.walk_tables()
    root = np.array([Vocabulary([b"ab", b"b"]).trie.num_nodes], dtype=np.int64)
    raw_walk(rows, classes, expanded, accepting, raw_layout, root, np.array([START], dtype=np.int64),
             np.zeros(1, dtype=np.int32), True)


def test_malformed_layouts_are_an_error_not_a_crash():
    good = Vocabulary([b"ab", b"b"]).trie.walk_layout
    _walk_raw(good)
    with pytest.raises(ValueError, match="not a trie layout"):
        _walk_raw(good[:8])
    with pytest.raises(ValueError, match="not a trie layout"):
        _walk_raw(b"\0" * 4 + good[4:])  # no magic
    words = np.frombuffer(good, dtype=np.int32).copy()
    words[3 + FIELDS.index("pre_next")] = len(words)  # an array past the end
    with pytest.raises(ValueError, match="inconsistent trie layout"):
        _walk_raw(words.tobytes())
    words = np.frombuffer(good, dtype=np.int32).copy()
    words[int(words[3 + FIELDS.index("pre_next")])] = 10 ** 6  # the root's subtree runs past the nodes
    with pytest.raises(ValueError, match="inconsistent"):
        _walk_raw(words.tobytes())
    words = np.frombuffer(good, dtype=np.int32).copy()
    code = int(words[3 + FIELDS.index("pre_code")])
    words[code + 1] = 7 << 8 | ord("a")  # a node deeper than its parent allows
    with pytest.raises(ValueError, match="inconsistent preorder"):
        _walk_raw(words.tobytes())


def test_the_walk_marks_every_token_of_a_node_with_several():
    """Byte-fallback vocabularies spell some bytes twice (`<0x61>` and `a`): both ids are allowed."""
    vocab = Vocabulary([b"a", b"ab", b"a", b"b", b"ab"])
    dfa = AutomatonBuilder().eager(lit("ab"))
    words = np.zeros(1, dtype=np.int32)
    walk_state(vocab.trie, dfa, START, words)
    assert sorted(unpack_token_ids(words).tolist()) == [0, 1, 2, 4]
