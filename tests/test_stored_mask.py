"""Stored masks (the words that differ from a shared base) against plain numpy, and the cache
keeping sparse masks small: what a matcher writes equals the dense mask."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from formwork.grammar import GrammarCompiler, Vocabulary, compile_json_schema
from formwork.grammar._packed import diff_words, nonzero_words, or_words, write_words
from formwork.grammar.stored_mask import DENSE_SHARE, StoredMask
from formwork.grammar.token_mask import TokenMaskCache

masks = st.integers(1, 300).flatmap(lambda n: st.tuples(
    st.lists(st.integers(-2**31, 2**31 - 1), min_size=n, max_size=n),
    st.lists(st.sampled_from([0, 1, -1, 7]), min_size=n, max_size=n),
    st.lists(st.booleans(), min_size=n, max_size=n)))


def _pair(data: tuple[list[int], list[int], list[bool]]) -> tuple[np.ndarray, np.ndarray]:
    """A base and a mask that agrees with it where `same` says so."""
    values, base_values, same = data
    base = np.array(base_values, dtype=np.int32)
    words = np.where(same, base, np.array(values, dtype=np.int32)).astype(np.int32)
    return words, base


@settings(max_examples=200, deadline=None)
@given(masks, st.booleans())
def test_diff_words_lists_exactly_the_differing_words(data, with_base: bool) -> None:
    words, base = _pair(data)
    reference = base if with_base else np.zeros_like(base)
    at, bits = diff_words(words, base if with_base else None, len(words))
    expected = np.flatnonzero(words != reference)
    np.testing.assert_array_equal(np.frombuffer(at, dtype=np.int64), expected)
    np.testing.assert_array_equal(np.frombuffer(bits, dtype=np.int32), words[expected])
    if len(expected):
        assert diff_words(words, base if with_base else None, len(expected) - 1) is None
    if not with_base:
        assert nonzero_words(words) == (at, bits)


@settings(max_examples=200, deadline=None)
@given(masks, st.booleans())
def test_diff_words_over_a_base_lists_the_mask_base_or_words_and_clears(data, with_base: bool) -> None:
    extra, base = _pair(data)  # the tokens beyond the base, some of them in it already
    reference = base if with_base else np.zeros_like(base)
    mask = extra | reference
    expected = np.flatnonzero(mask != reference)
    scratch = extra.copy()
    at, bits = diff_words(scratch, base if with_base else None, len(extra), True, True)
    np.testing.assert_array_equal(np.frombuffer(at, dtype=np.int64), expected)
    np.testing.assert_array_equal(np.frombuffer(bits, dtype=np.int32), mask[expected])
    assert not scratch.any()  # cleared
    if len(expected):
        scratch = extra.copy()
        assert diff_words(scratch, base if with_base else None, len(expected) - 1, True, True) is None
        np.testing.assert_array_equal(scratch, extra)  # too many: left as it was
    scratch = extra.copy()
    base.flags.writeable = False
    stored = StoredMask.over(scratch, base if with_base else None)
    np.testing.assert_array_equal(stored.dense(), mask)
    assert not scratch.any()


@settings(max_examples=200, deadline=None)
@given(masks, st.booleans(), st.integers(0, 2))
def test_stored_mask_writes_and_densifies_the_mask(data, with_base: bool, row: int) -> None:
    words, base = _pair(data)
    base.flags.writeable = False  # bases are shared read-only masks
    stored = StoredMask.of(words, base if with_base else None)
    out = np.full((3, len(words)), 12345, dtype=np.int32)
    stored.write(out, row)
    np.testing.assert_array_equal(out[row], words)
    assert (np.delete(out, row, axis=0) == 12345).all()  # other rows untouched
    np.testing.assert_array_equal(stored.dense(), words)
    assert not stored.dense().flags.writeable
    target = np.arange(len(words), dtype=np.int32)
    stored.or_into(target)
    np.testing.assert_array_equal(target, np.arange(len(words), dtype=np.int32) | words)
    if len(np.flatnonzero(words != (base if with_base else 0))) > len(words) // DENSE_SHARE:
        assert stored.at == b"" and stored.base is not None  # too many differences: a dense copy


def test_write_words_rejects_bad_shapes_and_indices() -> None:
    out = np.zeros((2, 4), dtype=np.int32)
    with pytest.raises(IndexError):
        write_words(out, 2, 4, None, b"", b"")
    write_words(out, -1, 4, None, np.array([3], dtype=np.int64).tobytes(), np.array([5], dtype=np.int32).tobytes())
    assert out[1, 3] == 5 and out[0].sum() == 0
    with pytest.raises(ValueError):
        write_words(out, 0, 4, None, np.array([4], dtype=np.int64).tobytes(), np.array([1], dtype=np.int32).tobytes())
    with pytest.raises(ValueError):
        write_words(out, 0, 3, None, b"", b"")  # rows of 3 words do not tile 8 words
    with pytest.raises(ValueError):
        write_words(out, 0, 4, np.zeros(5, dtype=np.int32), b"", b"")
    with pytest.raises(ValueError):
        diff_words(np.zeros(4, dtype=np.int32), np.zeros(3, dtype=np.int32), 4)
    read_only = np.ones(4, dtype=np.int32)
    read_only.flags.writeable = False
    with pytest.raises(ValueError):
        diff_words(read_only, None, 4, True)  # cannot clear it
    two = np.array([1, 0], dtype=np.int64).tobytes()
    with pytest.raises(ValueError):  # a base's replaced words must come in order
        or_words(np.zeros(4, dtype=np.int32), two, np.ones(2, dtype=np.int32).tobytes(), np.zeros(4, dtype=np.int32))


def test_cache_keeps_sparse_masks_small_and_matchers_write_them_exactly() -> None:
    tokens = [bytes([b]) for b in b'{}":, abcdefgh0123456789'] + [b'{"', b'":', b'abc', b'", "', b"12"]
    vocab = Vocabulary(tokens + [None], stop_token_ids=[len(tokens)], vocab_size=4096)
    compiler = GrammarCompiler(vocab, cache_enabled=False)
    schema = {"type": "object", "properties": {"abc": {"type": "integer"}}, "required": ["abc"]}
    grammar = compile_json_schema(schema, vocab, compiler=compiler)
    matcher = grammar.matcher()
    bitmask = torch.full((2, (vocab.vocab_size + 31) // 32), -1, dtype=torch.int32)
    for text in ['{"', 'abc', '":', ' ', '12', '}']:
        matcher.fill_next_token_bitmask(bitmask, 1)
        dense = TokenMaskCache(vocab, use_slices=False, use_lexemes=False).mask(grammar.dfa, matcher._state)
        np.testing.assert_array_equal(bitmask[1].numpy(), dense)
        assert (bitmask[0] == -1).all()
        assert matcher.accept_string(text)
    kept = list(grammar.state_masks.values())
    shared = {id(m.base) for m in compiler.mask_cache._masks.values() if all(m is not k for k in kept)}
    assert len(kept) == 6 and all(len(m.at) // 8 <= 2 for m in kept)
    assert all(m.base is None or id(m.base) in shared for m in kept)  # no dense copies: zeros or a lexeme's mask
    assert sum(m.base is None for m in kept) >= 4
