"""Context-free constraints: Lark and GBNF grammars compiled to the Earley configuration automaton."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import deepseek_tokenizer, unpack_mask, walk_token_ids  # noqa: E402
from conftest_grammar_cfg import (  # noqa: E402
    AMBIGUOUS_LARK, ARITH_LARK, JSON_GBNF, JSON_LARK, LEFT_LIST_LARK, SQL_LARK, accepts, complete,
)

from formwork.grammar import (  # noqa: E402
    GrammarBudgetError, GrammarCompiler, GrammarError, UndefinedRuleError, allocate_token_bitmask, compile_ebnf,
)
from formwork.grammar.cfg import EmptyLanguageError, compile_cfg  # noqa: E402
from formwork.grammar.cfg.lark_frontend import EbnfSyntaxError  # noqa: E402
from formwork.grammar.dfa import START  # noqa: E402
from formwork.grammar.ir import Grammar, RuleRef, alt, lit, seq  # noqa: E402
from formwork.grammar.regex_parser import regex
from formwork.grammar.packed import pack_token_ids  # noqa: E402


@pytest.fixture(scope="module")
def compiler(vocab):
    return GrammarCompiler(vocab)


JSON_CASES = [
    ('{"a": [1, 2.5, -3e10, {"b": null}], "c": "x\\"y\\u00e9"}', True),
    ("[]", True), ("{}", True), ('"plain"', True), ("0", True), ("-0.5E+3", True), ("true", True),
    (' \n[ [ [ ] ] ]\t', True), ('{"k":{"k":{"k":{"k":{"k":[[[[1]]]]}}}}}', True),
    ("[1,]", False), ("{,}", False), ("01", False), ('{"a" 1}', False), ("[1 2]", False),
    ('"\\x"', False), ('"tab\there"', False), ("tru", False), ("{'a': 1}", False), ("[[[]]", False),
    ("1.", False), (".5", False), ('{"a":1}}', False),
]


@pytest.mark.parametrize("text,ok", JSON_CASES)
def test_ecma404_json_grammar(compiler, text, ok):
    g = compiler.compile_ebnf(JSON_LARK)
    assert accepts(g, text) == ok
    if ok:
        json.loads(text)
    else:
        with pytest.raises(ValueError):
            json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


ARITH_CASES = [("1+2*3", True), ("(1 + 2) * -3 / 4.5", True), ("--1", True), ("((((1))))", True),
               ("1+", False), ("*1", False), ("(1", False), ("1 2", False), ("()", False)]
SQL_CASES = [
    ("SELECT * FROM t", True), ("select a, b AS x from t1, t2 where a = 1 and (b < 'z' or not c >= 2);", True),
    ("SELECT DISTINCT count(a) FROM t ORDER BY a DESC LIMIT 10", True), ("SELECT a.b + 1 FROM t", True),
    ("SELECT FROM t", False), ("SELECT * t", False), ("SELECT * FROM t WHERE", False),
    ("SELECT * FROM t LIMIT x", False), ("SELECT * FROM t;;", False),
]
LIST_CASES = [("a", True), ("a,bc,d", True), (",".join(["x"] * 300), True), ("a,", False), (",a", False),
              ("a,,b", False), ("", False)]
AMBIGUOUS_CASES = [("a", True), ("aaa", True), ("a+aa+(a)a", True), ("(a+a)(aa)", True), ("+a", False),
                   ("a+", False), ("()", False), ("a++a", False)]


@pytest.mark.parametrize("grammar,cases", [(ARITH_LARK, ARITH_CASES), (SQL_LARK, SQL_CASES),
                                           (LEFT_LIST_LARK, LIST_CASES), (AMBIGUOUS_LARK, AMBIGUOUS_CASES)],
                         ids=["arithmetic", "sql", "left-recursive-list", "ambiguous"])
def test_grammars_accept_and_reject_like_lark(compiler, grammar, cases):
    g = compiler.compile_ebnf(grammar)
    reference = lark.Lark(grammar, parser="earley", lexer="dynamic_complete")
    for text, ok in cases:
        assert accepts(g, text) == ok, text
        try:
            reference.parse(text)
            lark_ok = True
        except lark.exceptions.LarkError:
            lark_ok = False
        assert lark_ok == ok, text


def test_gbnf_json_matches_lark_json(compiler):
    gbnf = compiler.compile_ebnf(JSON_GBNF)
    for text, ok in JSON_CASES:
        if "\n" in text or "\t" in text:
            continue  # the GBNF grammar allows a narrower whitespace set
        assert accepts(gbnf, text) == ok, text
    assert accepts(gbnf, '[1,   2]') and not accepts(gbnf, '[1,       2]')  # ws bounded to 4


def test_gbnf_syntax(compiler):
    g = compiler.compile_ebnf('root ::= "a" x{2,3} [^a-c\\n]? # comment\nx ::= "\\x41" | ("b" | "c")+\n')
    assert accepts(g, "aAA") and accepts(g, "abcbcA") and accepts(g, "aAAz")
    assert not accepts(g, "aA") and not accepts(g, "aAAa") and not accepts(g, "aAA\n")
    with pytest.raises(EbnfSyntaxError, match="line 2"):
        compile_ebnf('root ::= x\nx ::= "unterminated\n', compiler.vocab)
    with pytest.raises(UndefinedRuleError):
        compile_ebnf('root ::= missing\n', compiler.vocab)


def test_bad_grammars_are_typed_errors(compiler):
    with pytest.raises(EbnfSyntaxError):
        compiler.compile_ebnf("start: ( unbalanced")
    with pytest.raises(EmptyLanguageError, match="no finite string"):
        compiler.compile_ebnf('start: "(" start ")"')
    with pytest.raises(GrammarError, match="lookaround"):
        compiler.compile_ebnf('start: /a(?=b)/ "b"')
    with pytest.raises(GrammarError):
        compiler.compile_ebnf("   ")


def test_ir_grammar_recursion_and_budget():
    nested = Grammar({"start": alt(seq(lit("("), RuleRef("start"), lit(")")), regex("[a-z]+"))}, "start")
    dfa = compile_cfg(nested)
    assert dfa.accepts(b"((ab))") and not dfa.accepts(b"((ab)") and not dfa.accepts(b"()")
    assert dfa.accepts(b"(" * 500 + b"x" + b")" * 500)
    explosive = Grammar({"start": alt(seq(RuleRef("start"), RuleRef("start")), lit("a"), lit(""))}, "start")
    dfa = compile_cfg(explosive)
    assert dfa.accepts(b"a" * 40)
    blowup = Grammar({"s": alt(seq(RuleRef("s"), lit(""), RuleRef("s")), regex("a{1,60}"))}, "s")
    with pytest.raises(GrammarBudgetError):
        compile_cfg(blowup).accepts(b"a" * 3000)


def test_rollback_is_exact(compiler, vocab):
    g = compiler.compile_ebnf(JSON_LARK)
    m = g.matcher()
    bitmask = allocate_token_bitmask(2, vocab.vocab_size)
    text = '{"a": [1, {"b": "c"}], "d": true}'
    ids = deepseek_tokenizer().encode(text, add_special_tokens=False).ids
    assert len(ids) > 10 and b"".join(vocab.token_bytes[i] for i in ids).decode() == text
    snapshots = []
    for i in ids:
        m.fill_next_token_bitmask(bitmask, 0)
        snapshots.append(bitmask[0].clone())
        assert m.accept_token(i)
    assert m.can_terminate()
    for back in range(len(ids), 0, -1):
        m.rollback(1)
        m.fill_next_token_bitmask(bitmask, 1)
        assert (bitmask[1] == snapshots[back - 1]).all()
    assert m.num_accepted == 0


def test_jump_forward_through_the_parser(compiler):
    g = compiler.compile_ebnf('start: "select" NAME "from" NAME\nNAME: / [a-z]+ /')
    m = g.matcher()
    assert m.find_jump_forward_string() == "select "
    assert m.accept_string("select x")
    assert m.find_jump_forward_string() == ""
    assert m.accept_string(" ")
    assert m.find_jump_forward_string() == "from "


def _lark_reference(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="earley", lexer="dynamic_complete")


_REFERENCES: dict[str, lark.Lark] = {}


@settings(deadline=None, max_examples=24, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), which=st.sampled_from(["json", "arith", "sql"]))
def test_random_walks_end_in_strings_lark_parses(compiler, vocab, data, which):
    grammar = {"json": JSON_LARK, "arith": ARITH_LARK, "sql": SQL_LARK}[which]
    g = compiler.compile_ebnf(grammar)
    m = g.matcher(max_step_seconds=10.0)  # generous: the 2-core box is shared
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    text = b""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    for _ in range(data.draw(st.integers(1, 16), label="steps")):
        m.fill_next_token_bitmask(bitmask, 0)
        allowed = unpack_mask(bitmask[0], vocab.vocab_size)
        allowed[list(vocab.stop_token_ids)] = False
        ids = np.flatnonzero(allowed)
        assert len(ids), "a live prefix always has a continuation"
        token = int(rng.choice(ids))
        for rejected in rng.choice(np.flatnonzero(~allowed), 3):
            if int(rejected) not in vocab.stop_token_ids:
                assert not m.accept_token(int(rejected))
        assert m.accept_token(token)
        text += vocab.token_bytes[token]
    state = g.dfa.walk(START, text)
    completed = text + complete(g.dfa, state)
    assert accepts(g, completed.decode())
    reference = _REFERENCES.setdefault(which, _lark_reference(grammar))
    reference.parse(completed.decode())
    if which == "json":
        json.loads(completed)


@pytest.mark.parametrize("grammar,texts", [
    (JSON_LARK, ['{"key": [1, -2.5e3, {"x": "y\\n"}], "t": true}', '[[], {}, "a b", null]']),
    (SQL_LARK, ["select a, b as c from t where a = 1 and (b < 'z' or not c >= 2) order by a desc limit 3;"]),
    (AMBIGUOUS_LARK, ["a+aa+(a)a"]),
    (ARITH_LARK, ["(1 + 22) * -3 / 4.5 - 6"]),  # an %ignore'd terminal between any two others
    (LEFT_LIST_LARK, ["ab,c,def,g"]),
    ('start: x? "b"* y\nx: "a"+ | \ny: ("c" | "dd")?', ["aabbbdd"]),  # nullable rules and terminals
], ids=["json", "sql", "ambiguous", "arith", "left-list", "nullable"])
def test_split_masks_equal_the_full_trie_walk(compiler, vocab, grammar, texts):
    """The boundary decomposition of CFG masks equals one walk of the whole configuration automaton."""
    g = compiler.compile_ebnf(grammar)
    stops = np.asarray(vocab.stop_token_ids, dtype=np.int64)
    for text in texts:
        state = START
        for token in deepseek_tokenizer().encode(text, add_special_tokens=False).ids:
            full = walk_token_ids(vocab.trie, g.dfa, state)
            if g.dfa.accepting[state]:
                full = np.concatenate([full, stops])
            np.testing.assert_array_equal(g.mask_cache.mask(g.dfa, state), pack_token_ids(full, vocab.vocab_size))
            state = g.dfa.walk(state, vocab.token_bytes[token])
            assert state != 0


def test_mask_step_budget_is_an_error(vocab):
    g = GrammarCompiler(vocab, cache_enabled=False).compile_ebnf(SQL_LARK)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    with pytest.raises(GrammarBudgetError, match="step budget"):
        g.matcher(max_step_seconds=0.0).fill_next_token_bitmask(bitmask, 0)
    g.matcher().fill_next_token_bitmask(bitmask, 0)  # the default budget is enough
    assert unpack_mask(bitmask[0], vocab.vocab_size).sum() > 0


@pytest.mark.parametrize("grammar,cases", [
    ('start: "a"*', [("", True), ("a", True), ("aaa", True), ("b", False)]),
    ('start: item?\nitem: "x" item?', [("", True), ("x", True), ("xxx", True), ("xy", False)]),
    ('start: "(" start ")" | ', [("", True), ("()", True), ("(())", True), ("(()", False)]),
])
def test_nullable_start_rules_accept_the_empty_string_and_more(compiler, grammar, cases):
    """The start rule completes in the first set (empty input) and after reading input alike."""
    g = compiler.compile_ebnf(grammar)
    for text, ok in cases:
        assert accepts(g, text) == ok, text
        m = g.matcher()
        if text == "":
            assert m.can_terminate()


def test_compiling_builds_each_terminals_first_tables(vocab, monkeypatch):
    """Within its CPU cap, compiling a recursive grammar builds the tables of every terminal's start
    state and the states one byte in, before any mask; with no time for it, none, and the masks
    are the same."""
    from formwork.grammar.cfg import masks as cfg_masks

    def compiled(seconds: float):
        monkeypatch.setattr(cfg_masks, "WARM_SECONDS", seconds)
        g = GrammarCompiler(vocab, cache_enabled=False).compile_ebnf(SQL_LARK)
        tables = dict(g.dfa.masks._tables)
        return tables, g.dfa.masks.builder.terminals, g.mask_cache.mask(g.dfa, START)

    warmed, terminals, mask = compiled(10.0)
    g = GrammarCompiler(vocab, cache_enabled=False).compile_ebnf(SQL_LARK)
    order, parser = g.dfa.masks._nearest_first(), g.dfa.masks.builder.parser
    assert sorted(order) == list(range(len(terminals)))  # every terminal once, the first set's first
    assert set(order[:len(parser.expected(parser.start))]) == set(parser.expected(parser.start))
    for t, dfa in enumerate(terminals):
        row = np.asarray(dfa.row(START))
        assert {(t, START)} | {(t, int(s)) for s in row[row != 0]} <= warmed.keys()
    cold, _, same = compiled(0.0)
    assert len(cold) < len(warmed)
    np.testing.assert_array_equal(mask, same)
