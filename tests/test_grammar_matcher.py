"""Token masks and the Matcher: masks equal brute force, random walks over the real 129k
vocabulary stay inside the language (checked with interegular / plain string oracles),
accept_token agrees with the mask, rollback is exact, termination and jump-forward."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import interegular
import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import (  # noqa: E402
    brute_force_allowed, byte_level_tokenizer, deepseek_vocab, unpack_mask,
)

from formwork.grammar import (  # noqa: E402
    GrammarBudgetError, GrammarCompiler, GrammarError, RollbackError, Vocabulary,
    allocate_token_bitmask, compile_choice, compile_grammar, compile_regex,
)
from formwork.grammar.ir import NOTHING, alt, lit  # noqa: E402

WALK_REGEXES = [
    r"[0-9]{3}-[a-z]+",
    r'\{"name": "[^"\\]{0,12}", "age": (0|[1-9][0-9]{0,2})\}',
    r"(true|false|null|-?[0-9]+(\.[0-9]+)?)",
    r"[a-zA-Z_][a-zA-Z0-9_]{0,20}( = [0-9]+)?;",
    r"(日本|中文|한국어)+ ?[🎉✨]",
]
WALK_CHOICES = [["yes", "no", "maybe"], ["Paris", "Paris, France", "Pari", "London", " Tokyo"]]


def _prefix_live(fsm, text: str) -> bool:
    state = fsm.initial
    for ch in text:
        nxt = fsm.map[state].get(fsm.alphabet[ch])
        if nxt is None:
            return False
        state = nxt
    return fsm.islive(state)


def _complete_chars(data: bytes) -> str:
    import codecs

    return codecs.getincrementaldecoder("utf-8")().decode(data, final=False)


def _walk(grammar, data, check_prefix, check_final, max_steps: int = 14) -> None:
    vocab = grammar.vocab
    stops = set(vocab.stop_token_ids)
    matcher = grammar.matcher()
    bitmask = allocate_token_bitmask(2, vocab.vocab_size)
    text = b""
    for _ in range(max_steps):
        matcher.fill_next_token_bitmask(bitmask, index=1)
        allowed = unpack_mask(bitmask[1], vocab.vocab_size)
        ids = np.flatnonzero(allowed)
        assert len(ids), f"dead end after {text!r}"
        assert allowed[list(stops)].all() == matcher.can_terminate()
        text_allowed = np.isin(ids, list(stops), invert=True).any()
        assert matcher.is_complete() == (matcher.can_terminate() and not text_allowed)
        # a disallowed token is refused and leaves the state (and mask) unchanged
        refused = np.flatnonzero(~allowed[: vocab.tokenizer_size])
        if len(refused):
            bad = int(refused[data.draw(st.integers(0, len(refused) - 1))])
            assert not matcher.accept_token(bad)
        if matcher.can_terminate() and data.draw(st.booleans()):
            token = next(iter(stops))
        else:
            text_ids = ids[~np.isin(ids, list(stops))]
            if not len(text_ids):
                token = next(iter(stops))
            else:
                token = int(text_ids[data.draw(st.integers(0, len(text_ids) - 1))])
        assert matcher.accept_token(token)
        if token in stops:
            assert matcher.is_terminated() and not matcher.can_terminate() and matcher.is_complete()
            check_final(text.decode("utf-8"))
            return
        text += vocab.token_bytes[token]
        assert check_prefix(_complete_chars(text)), text


@pytest.mark.parametrize("pattern", WALK_REGEXES)
def test_random_walks_stay_in_regex_language(pattern: str) -> None:
    vocab = deepseek_vocab()
    grammar = compile_regex(pattern, vocab)
    fsm = interegular.parse_pattern(pattern).to_fsm()
    full = re.compile(pattern)

    @settings(deadline=None, max_examples=12, database=None)
    @given(st.data())
    def walk(data) -> None:
        _walk(grammar, data, lambda t: _prefix_live(fsm, t), lambda t: full.fullmatch(t) is not None)

    walk()


@pytest.mark.parametrize("choices", WALK_CHOICES)
def test_random_walks_stay_in_choices(choices: list[str]) -> None:
    grammar = compile_choice(choices, deepseek_vocab())

    @settings(deadline=None, max_examples=15, database=None)
    @given(st.data())
    def walk(data) -> None:
        _walk(grammar, data, lambda t: any(c.startswith(t) for c in choices), lambda t: t in choices)

    walk()


def test_masks_equal_brute_force_on_real_vocab() -> None:
    vocab = deepseek_vocab()
    compiler = GrammarCompiler(vocab)  # fresh mask cache: every mask below is computed here
    rng = np.random.default_rng(1)
    for pattern in [WALK_REGEXES[1], r"[^\n]{0,40}", r" ?(日本|[a-f0-9]{2,5})*\n", r'"[^"\\]*"']:
        grammar = compiler.compile_regex(pattern)
        grammar.dfa.table  # noqa: B018 - build every state so that any can be picked
        states = [1] + rng.choice(np.arange(2, grammar.num_states), size=1, replace=False).tolist()
        for state in states:
            got = unpack_mask(grammar.mask_cache.mask(grammar.dfa, state), vocab.vocab_size)
            assert (got == brute_force_allowed(vocab, grammar.dfa, state)).all(), (pattern, state)
    # string-content states took the sliced path (slice mask + walk of the remaining tokens)
    assert compiler.mask_cache.sliced >= 1


def test_masks_equal_brute_force_on_every_state_of_a_small_vocab() -> None:
    tok = byte_level_tokenizer(['{"id": 12, "tags": ["a", "b"]}', "日本語 é\n", "abc-123"] * 20)
    vocab = Vocabulary.from_pretrained(tok, vocab_size=tok.get_vocab_size() + 5, stop_token_ids=[0])
    for pattern in [r'\{"id": [0-9]+(, "tags": \[("[a-z]*"(, "[a-z]*")*)?\])?\}', r"[^a]{2,6}", r"(日本|é|\n)+"]:
        grammar = compile_regex(pattern, vocab)
        grammar.dfa.table  # noqa: B018 - build every state
        for state in range(1, grammar.num_states):
            got = unpack_mask(grammar.mask_cache.mask(grammar.dfa, state), vocab.vocab_size)
            assert (got == brute_force_allowed(vocab, grammar.dfa, state)).all(), (pattern, state)


def test_rollback_restores_masks_exactly() -> None:
    vocab = deepseek_vocab()
    grammar = compile_regex(WALK_REGEXES[1], vocab)
    matcher = grammar.matcher()
    ids = [i for i in _greedy_ids(vocab, '{"name": "Ann", "age": 42}')]
    masks, flags = [], []
    for token in ids:
        masks.append(matcher.next_token_mask().copy())
        flags.append(matcher.can_terminate())
        assert matcher.accept_token(token)
    assert matcher.can_terminate()
    assert matcher.accept_token(vocab.stop_token_ids[0]) and matcher.is_terminated()
    matcher.rollback(1)
    assert not matcher.is_terminated() and matcher.can_terminate()
    for k in range(len(ids), 0, -1):
        matcher.rollback(1)
        assert np.array_equal(matcher.next_token_mask(), masks[k - 1]) and matcher.can_terminate() == flags[k - 1]
    with pytest.raises(RollbackError):
        matcher.rollback(1)
    assert matcher.accept_string('{"name": "Bo", "age": 7}') and matcher.can_terminate()
    matcher.reset()
    assert np.array_equal(matcher.next_token_mask(), masks[0]) and matcher.num_accepted == 0


def _greedy_ids(vocab: Vocabulary, text: str) -> list[int]:
    from conftest_grammar import deepseek_tokenizer

    ids = deepseek_tokenizer().encode(text, add_special_tokens=False).ids
    assert vocab.decode(ids) == text.encode()
    return ids


def test_termination_rules() -> None:
    vocab = deepseek_vocab()
    matcher = compile_regex(r"ab+", vocab).matcher()
    eos = vocab.stop_token_ids[0]
    assert not matcher.can_terminate() and not matcher.accept_token(eos)
    assert matcher.accept_string("ab") and matcher.can_terminate()
    assert not matcher.is_complete()  # "ab" may end, and may go on
    assert not matcher.accept_string("abc") and matcher.accept_string("bb")  # all or nothing
    done = compile_regex(r"ab", vocab).matcher()
    assert not done.is_complete() and done.accept_string("a") and not done.is_complete()
    assert done.accept_string("b") and done.is_complete() and not done.is_terminated()  # only a stop may follow
    assert matcher.accept_token(eos) and matcher.is_terminated()
    assert not matcher.accept_token(eos) and not matcher.accept_string("b")
    bitmask = allocate_token_bitmask(1, vocab.vocab_size).fill_(-1)
    matcher.fill_next_token_bitmask(bitmask)
    assert not bitmask.any()
    for bad in (-1, vocab.vocab_size, 0):  # out of range, and a special (BOS) token
        matcher.rollback(1)
        assert not matcher.accept_token(bad)


def test_jump_forward_strings() -> None:
    vocab = deepseek_vocab()
    assert compile_regex(r"abc(d|e)", vocab).matcher().find_jump_forward_string() == "abc"
    assert compile_choice(["hello world", "hello there"], vocab).matcher().find_jump_forward_string() == "hello "
    assert compile_regex(r"日本[語人]", vocab).matcher().find_jump_forward_string() == "日本"
    # 日 and 旦 share their first two bytes: no whole character is forced
    assert compile_choice(["日", "旦"], vocab).matcher().find_jump_forward_string() == ""
    matcher = compile_regex(r"x+y", vocab).matcher()
    assert matcher.find_jump_forward_string() == "x"
    assert matcher.accept_string("x") and matcher.find_jump_forward_string() == ""
    ab = compile_regex(r"ab", vocab).matcher()
    assert ab.accept_string("ab") and ab.find_jump_forward_string() == ""  # accepting: may stop


def test_compiler_cache_and_shared_mask_cache() -> None:
    vocab = deepseek_vocab()
    cached = GrammarCompiler(vocab)
    assert cached.compile_regex("[a-z]+") is cached.compile_regex("[a-z]+")
    uncached = GrammarCompiler(vocab, cache_enabled=False)
    first, second = uncached.compile_regex("[a-z]+!"), uncached.compile_regex("[a-z]+!")
    assert first is not second
    first.matcher().next_token_mask()
    misses = uncached.mask_cache.misses
    second.matcher().next_token_mask()  # same language: the state-level mask is reused
    assert uncached.mask_cache.misses == misses and uncached.mask_cache.hits >= 1


def test_errors() -> None:
    vocab = deepseek_vocab()
    with pytest.raises(GrammarError, match="non-empty"):
        compile_choice([], vocab)
    with pytest.raises(GrammarError, match="no string"):
        compile_grammar(NOTHING, vocab)
    with pytest.raises(GrammarError, match="IR Node"):
        compile_grammar("abc", vocab)  # type: ignore[arg-type]
    matcher = compile_grammar(alt(lit("a"), lit("b")), vocab).matcher()
    with pytest.raises(GrammarError, match="int32"):
        matcher.fill_next_token_bitmask(torch.zeros((1, 10), dtype=torch.int32))
    slow = compile_regex(r"[a-z ]{0,50}\.", vocab).matcher(max_step_seconds=0.0)
    with pytest.raises(GrammarBudgetError, match="step budget"):
        slow.next_token_mask()


def test_matchers_write_into_whichever_bitmask_they_are_given() -> None:
    """The numpy view of the last bitmask is remembered across matchers: alternating tensors,
    a new one and a narrower view of the same memory each get their own rows written."""
    vocab = deepseek_vocab()
    a_mask = compile_regex("a+", vocab).matcher().next_token_mask()
    b_mask = compile_regex("b+", vocab).matcher().next_token_mask()
    first, second = allocate_token_bitmask(2, vocab.vocab_size), allocate_token_bitmask(1, vocab.vocab_size)
    for _ in range(2):
        compile_regex("a+", vocab).matcher().fill_next_token_bitmask(first, 1)
        compile_regex("b+", vocab).matcher().fill_next_token_bitmask(second, 0)
        np.testing.assert_array_equal(first[1].numpy(), a_mask)
        np.testing.assert_array_equal(second[0].numpy(), b_mask)
        assert not first[0].any()
    del first
    third = allocate_token_bitmask(2, vocab.vocab_size)
    compile_regex("a+", vocab).matcher().fill_next_token_bitmask(third, -1)
    np.testing.assert_array_equal(third[1].numpy(), a_mask)
    with pytest.raises(IndexError):
        compile_regex("a+", vocab).matcher().fill_next_token_bitmask(third, 2)
    with pytest.raises(IndexError):  # same memory as `third`, one row
        compile_regex("a+", vocab).matcher().fill_next_token_bitmask(third[:1], 1)


def test_token_moves_are_kept_per_grammar_and_replay_the_byte_walk():
    """A second matcher of the grammar takes the (state, token) moves the first one walked, and lands in
    the states a byte walk gives; a refused token is kept as refused."""
    from formwork.grammar.dfa import DEAD
    from formwork.grammar.matcher import MAX_TOKEN_STEPS

    vocab = Vocabulary([b"ab", b"cd", b"x", b"a", b"b", None], stop_token_ids=[5])
    grammar = GrammarCompiler(vocab, cache_enabled=False).compile_regex(r"(ab|cd)+")
    first, second = grammar.matcher(), grammar.matcher()
    ids = [vocab.token_bytes.index(t) for t in (b"ab", b"cd", b"ab")]
    for token_id in ids:
        assert first.accept_token(token_id)
    kept = dict(grammar.token_steps)
    assert len(kept) == len(ids)  # one move per (state, token) walked
    for token_id in ids:
        state = second._state
        assert second.accept_token(token_id)
        assert second._state == grammar.dfa.walk(state, vocab.token_bytes[token_id])
    assert grammar.token_steps == kept  # the second matcher walked no bytes
    refused = vocab.token_bytes.index(b"x")
    assert not second.accept_token(refused) and not second.accept_token(refused)
    assert DEAD in grammar.token_steps.values() and len(grammar.token_steps) <= MAX_TOKEN_STEPS


def test_fill_row_writes_what_the_checked_fill_writes():
    vocab = Vocabulary([b"ab", b"cd", b"x", b"a", b"b", None], stop_token_ids=[5])
    grammar = GrammarCompiler(vocab, cache_enabled=False).compile_regex(r"(ab|cd)+")
    checked, trusted = allocate_token_bitmask(3, vocab.vocab_size), allocate_token_bitmask(3, vocab.vocab_size)
    matcher = grammar.matcher()
    for row, token in enumerate([None, b"ab", b"cd"]):
        if token is not None:
            assert matcher.accept_token(vocab.token_bytes.index(token))
        matcher.fill_next_token_bitmask(checked, row)
        matcher.fill_row(trusted.numpy(), row)
    assert torch.equal(checked, trusted) and checked[1].item() != checked[0].item()  # the stop token joins


@settings(max_examples=40, deadline=None)
@given(tokens=st.lists(st.integers(-2, 7), max_size=12))
def test_advance_is_accept_token_then_can_terminate(tokens):
    """`advance` (the engine's one call a constrained token) agrees with `accept_token` + `can_terminate` on a
    twin matcher, kept moves or not, stop tokens and out-of-range ids included."""
    vocab = Vocabulary([b"ab", b"cd", b"x", b"a", b"b", None], stop_token_ids=[5])
    grammar = GrammarCompiler(vocab, cache_enabled=False).compile_regex(r"(ab|cd)+a?")
    twin_grammar = GrammarCompiler(vocab, cache_enabled=False).compile_regex(r"(ab|cd)+a?")
    warm = grammar.matcher()  # a first matcher keeps the moves the second one replays
    for token_id in tokens:
        warm.accept_token(token_id)
    matcher, twin = grammar.matcher(), twin_grammar.matcher()
    for token_id in tokens + tokens:
        expected = (2 if twin.can_terminate() else 1) if twin.accept_token(token_id) else 0
        assert matcher.advance(token_id) == expected
        assert (matcher._state, matcher.is_terminated(), matcher.num_accepted) == (
            twin._state, twin.is_terminated(), twin.num_accepted)


def test_fill_rows_writes_what_fill_row_writes():
    from formwork.grammar import Matcher

    vocab = Vocabulary([b"ab", b"cd", b"x", b"a", b"b", None], stop_token_ids=[5])
    grammar = GrammarCompiler(vocab, cache_enabled=False).compile_regex(r"(ab|cd)+")
    matchers = [grammar.matcher() for _ in range(3)]
    assert matchers[1].accept_token(0) and matchers[2].accept_token(1) and matchers[2].accept_token(5)  # ends
    one, batch = allocate_token_bitmask(4, vocab.vocab_size).numpy(), allocate_token_bitmask(4, vocab.vocab_size).numpy()
    for row, matcher in zip((3, 0, 1), matchers):
        matcher.fill_row(one, row)
    assert Matcher.fill_rows(batch, list(zip((3, 0, 1), matchers))) == []
    assert (one == batch).all() and len({int(one[r, 0]) for r in (3, 0, 1)}) == 3
