"""Tagged regions (`formwork.grammar.tags`): masks in free text touch only trigger-respecting
tokens, every completed region validates, the flags, rollback across region boundaries, bad specs."""
from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar import unpack_mask  # noqa: E402
from conftest_grammar_json import byte_vocab  # noqa: E402

from formwork.grammar import Vocabulary, allocate_token_bitmask, compile_regex, compile_tags  # noqa: E402
from formwork.grammar.tags import TagSpecError  # noqa: E402

CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8},
                                         "days": {"type": "integer", "minimum": 1, "maximum": 9}},
        "required": ["city"], "additionalProperties": False}
TOOL_BEGIN = '<tool_call>{"name": "get_weather", "arguments": '
SPEC = {
    "tags": [{"begin": TOOL_BEGIN, "schema": CITY, "end": "}</tool_call>"},
             {"begin": "<answer>", "regex": "[0-9]{1,4}", "end": "</answer>"},
             {"begin": "<answer kind=word>", "regex": "[a-z]+", "end": "</answer>"}],
    "triggers": ["<tool_call>", "<answer"],
}
TRIGGERS = SPEC["triggers"]
STOP = 256


def allowed(matcher, vocab: Vocabulary) -> np.ndarray:
    bitmask = allocate_token_bitmask(1, vocab.vocab_size)
    matcher.fill_next_token_bitmask(bitmask, 0)
    return unpack_mask(bitmask[0], vocab.vocab_size)


def small_vocab(pieces: list[bytes]) -> Vocabulary:
    """Every byte, the given multi-byte pieces, and a stop token last."""
    tokens = [bytes([b]) for b in range(256)] + sorted(set(pieces) - {bytes([b]) for b in range(256)})
    return Vocabulary(tokens + [None], stop_token_ids=[len(tokens)])


def first_trigger_end(text: bytes, triggers: list[str]) -> tuple[int, list[bytes]] | None:
    """(end of the first trigger occurrence to be complete, the triggers ending there)."""
    ends = {}
    for t in triggers:
        at = text.find(t.encode())
        if at >= 0:
            ends.setdefault(at + len(t), []).append(t.encode())
    if not ends:
        return None
    first = min(ends)
    return first, ends[first]


def region_start_ok(after: bytes, trigger: bytes) -> bool:
    """Whether `after` (the bytes after a just completed `trigger`, shorter than any region's
    rest + constraint + end) can start a region opened by `trigger` (checked per region by a
    regex matcher of its own language: rest of begin, constraint, end)."""
    for tag in SPEC["tags"]:
        begin = tag["begin"].encode()
        if not begin.startswith(trigger):
            continue
        rest = begin[len(trigger):]
        if rest.startswith(after) or after.startswith(rest) and _region_prefix(tag, after[len(rest):]):
            return True
    return False


def _region_prefix(tag: dict, text: bytes) -> bool:
    body = tag.get("regex") or r'\{ ?"city" ?: ?"[a-z ]{0,8}"'
    matcher = compile_regex(body + re.escape(tag["end"]), byte_vocab()).matcher()
    return matcher.accept_string(text)


@pytest.fixture(scope="module")
def grammar():
    return compile_tags(SPEC, byte_vocab())


def test_exports_from_grammar_package():
    import formwork.grammar as g

    assert g.compile_tags is compile_tags
    assert "compile_tags" in g.__all__


# ---- free text ----------------------------------------------------------------------------------

FREE_ALPHABET = st.sampled_from([b"a", b"<", b"<tool_call", b"<answer", b"x", b" ", b">", b"\xff", b"\n", b"_"])
PIECES = [b"<t", b"ool", b"_call>", b"<tool_call>{", b"<answer>1", b"<answer>", b"<answer kind", b"r>12",
          b"l>{", b"er>", b"<a", b"<ans", b"wer k", b"call>x", b"call>{\"", b" <", b"a<", b"\xff<", b"\x80\x80"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(FREE_ALPHABET, max_size=8))
def test_free_text_masks_only_trigger_respecting_tokens(parts):
    """After any free text, a token is allowed exactly when it completes no trigger, or when what
    it writes after the first trigger it completes can start one of that trigger's regions."""
    text = b"".join(parts)
    if first_trigger_end(text, TRIGGERS) is not None:
        text = text[: first_trigger_end(text, TRIGGERS)[0] - 1]  # keep it free text
    vocab = small_vocab(PIECES)
    matcher = compile_tags(SPEC, vocab).matcher()
    assert matcher.accept_string(text)
    got = allowed(matcher, vocab)
    assert got[vocab.stop_token_ids[0]], "a stop token is allowed in free text"
    for token_id, token in enumerate(vocab.token_bytes[:-1]):
        found = first_trigger_end(text + token, TRIGGERS)
        if found is None:
            expected = True
        else:
            end, triggers = found
            expected = any(region_start_ok((text + token)[end:], t) for t in triggers)
        assert got[token_id] == expected, (text, token)


def test_free_text_is_bytes_not_only_utf8(grammar):
    """Free text may hold any bytes (a model's unconstrained output is not masked to UTF-8)."""
    matcher = grammar.matcher()
    assert matcher.accept_string(b"\xff\x80 caf\xc3") and matcher.can_terminate()
    assert allowed(matcher, byte_vocab()).all()


# ---- regions ------------------------------------------------------------------------------------

def parse_regions(text: str) -> tuple[list[tuple[dict, str]], list[str]]:
    """The (tag, body) of each completed region, shortest-closing first, and the free texts
    (`text`: the output's bytes read as Latin-1, one character per byte)."""
    regions, free = [], []
    while True:
        found = first_trigger_end(text.encode("latin-1"), TRIGGERS)
        if found is None:
            free.append(text)
            return regions, free
        end, _ = found
        start = end - max(len(t) for t in TRIGGERS if text[:end].endswith(t))
        free.append(text[:start])
        rest = text[start:]
        for tag in SPEC["tags"]:
            if not rest.startswith(tag["begin"]):
                continue
            body_and_more = rest[len(tag["begin"]):]
            for at in [m.start() for m in re.finditer(re.escape(tag["end"]), body_and_more)]:
                if _valid(tag, body_and_more[:at]):
                    regions.append((tag, body_and_more[:at]))
                    text = body_and_more[at + len(tag["end"]):]
                    break
            else:
                continue
            break
        else:
            raise AssertionError(f"an unclosed or invalid region: {rest!r}")


def _valid(tag: dict, body: str) -> bool:
    try:
        body = body.encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:
        return False
    if "regex" in tag:
        return re.fullmatch(tag["regex"], body) is not None
    try:
        jsonschema.validate(json.loads(body), tag["schema"])
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


def random_output(grammar, vocab: Vocabulary, rng: random.Random, steps: int) -> tuple[bytes, bool]:
    """Random allowed tokens until a stop token or `steps` run out: in free text it sometimes
    writes a trigger, inside a region it often takes the forced continuation, it seldom stops."""
    matcher = grammar.matcher()
    out = bytearray()
    for _ in range(steps):
        forced = matcher.find_jump_forward_string()
        if matcher.can_terminate() and rng.random() < 0.15:
            piece = rng.choice(TRIGGERS).encode()
        elif forced and rng.random() < 0.7:
            piece = forced.encode()
        else:
            ids = np.flatnonzero(allowed(matcher, vocab)).tolist()
            stop = vocab.stop_token_ids[0]
            token = stop if stop in ids and rng.random() < 0.03 else rng.choice([t for t in ids if t != stop] or ids)
            assert matcher.accept_token(token)
            if token == stop:
                return bytes(out), True
            out += vocab.token_bytes[token]
            continue
        assert matcher.accept_string(piece)
        out += piece
    return bytes(out), False


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_every_completed_region_validates(grammar, seed):
    text, stopped = random_output(grammar, byte_vocab(), random.Random(seed), 300)
    if stopped:
        regions, free = parse_regions(text.decode("latin-1"))
        for tag, body in regions:
            assert _valid(tag, body)
        for piece in free:
            assert not any(t in piece for t in TRIGGERS)


def test_random_outputs_hold_regions_of_each_kind(grammar):
    """The sampler of the property above does reach and close regions of every tag."""
    kinds = set()
    for seed in range(12):
        text, stopped = random_output(grammar, byte_vocab(), random.Random(seed), 300)
        if stopped:
            kinds.update(tag["begin"] for tag, _ in parse_regions(text.decode("latin-1"))[0])
    assert kinds == {tag["begin"] for tag in SPEC["tags"]}


def test_tool_call_region_then_free_text(grammar):
    matcher = grammar.matcher()
    call = 'Let me check. ' + TOOL_BEGIN + '{"city": "Paris", "days": 3}' + '}</tool_call>'
    for i, byte in enumerate(call.encode()):
        assert matcher.accept_token(byte), call[: i + 1]
        inside = i >= len("Let me check. <tool_call>") - 1  # the trigger is complete
        if inside and i < len(call.encode()) - 1:
            assert not matcher.can_terminate(), "no stop inside a region"
    assert matcher.can_terminate()
    assert matcher.accept_string(" Done <answer>42</answer> bye") and matcher.can_terminate()
    assert not matcher.accept_string("<answer>x")  # digits only in a plain answer
    assert matcher.accept_string("<answer kind=word>ok</answer>")


def test_region_rejects_invalid_arguments(grammar):
    matcher = grammar.matcher()
    assert matcher.accept_string(TOOL_BEGIN + '{"city": "Paris"')
    assert not matcher.accept_string(', "days": 12')  # maximum 9
    assert not matcher.accept_string(', "extra": 1')
    assert matcher.accept_string('}}</tool_call>')


def test_jump_forward_spells_the_begin_after_a_trigger(grammar):
    matcher = grammar.matcher()
    assert matcher.find_jump_forward_string() == ""  # free text forces nothing
    assert matcher.accept_string("hi <tool_call>")
    assert matcher.find_jump_forward_string().startswith('{"name": "get_weather", "arguments": {')


def test_rollback_across_region_boundaries(grammar):
    vocab = byte_vocab()
    text = b'ok <answer>7</answer> ' + TOOL_BEGIN.encode() + b'{"city": "Rome"}}</tool_call> end'
    matcher = grammar.matcher()
    masks, ends = [allowed(matcher, vocab)], [matcher.can_terminate()]
    for byte in text:
        assert matcher.accept_token(byte)
        masks.append(allowed(matcher, vocab))
        ends.append(matcher.can_terminate())
    rng = random.Random(3)
    position = len(text)
    for _ in range(12):
        back = rng.randint(0, position)
        matcher.rollback(back)
        position -= back
        assert (allowed(matcher, vocab) == masks[position]).all() and matcher.can_terminate() == ends[position]
        forward = rng.randint(0, len(text) - position)
        for byte in text[position: position + forward]:
            assert matcher.accept_token(byte)
        position += forward
        assert (allowed(matcher, vocab) == masks[position]).all()


# ---- flags --------------------------------------------------------------------------------------

ANSWER = {"begin": "<a>", "regex": "[0-9]+", "end": "</a>"}


def _compile(**flags):
    return compile_tags({"tags": [ANSWER], "triggers": ["<a>"], **flags}, byte_vocab())


def test_without_free_text_only_regions_and_whitespace():
    matcher = _compile(free_text=False).matcher()
    got = allowed(matcher, byte_vocab())
    assert got[STOP] and got[ord("<")] and got[ord(" ")] and not got[ord("x")]
    assert matcher.accept_string(" \n<a>12</a>\n<a>3</a> ")
    assert matcher.can_terminate()
    assert not matcher.accept_string("x")
    assert not _compile(free_text=False).matcher().accept_string("hi <a>")


def test_at_least_one_region_before_the_end():
    matcher = _compile(at_least_one=True).matcher()
    assert not allowed(matcher, byte_vocab())[STOP]
    assert matcher.accept_string("text <a>1")
    assert not matcher.can_terminate()
    assert matcher.accept_string("</a>")
    assert matcher.can_terminate()
    assert matcher.accept_string(" more")
    assert matcher.can_terminate()


def test_stop_after_first_region():
    matcher = _compile(stop_after_first=True).matcher()
    assert allowed(matcher, byte_vocab())[STOP]
    assert matcher.accept_string("why not <a>5</a>")
    got = allowed(matcher, byte_vocab())
    assert got[STOP] and got.sum() == 1, "only the end may follow the first region"
    strict = _compile(stop_after_first=True, at_least_one=True, free_text=False).matcher()
    assert not allowed(strict, byte_vocab())[STOP]
    assert strict.accept_string("<a>5</a>") and allowed(strict, byte_vocab()).sum() == 1


def test_ebnf_and_recursive_schema_regions():
    tree = {"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                               "additionalProperties": False}}, "$ref": "#/$defs/node"}
    spec = {"tags": [{"begin": "<tree>", "schema": tree, "end": "</tree>"},
                     {"begin": "<expr>", "ebnf": 'start: e\ne: "(" e ")" | "x"', "end": "</expr>"}],
            "triggers": ["<tree>", "<expr>"]}
    matcher = compile_tags(spec, byte_vocab()).matcher()
    assert matcher.accept_string('a <tree>{"kids": [{"kids": [{}]}]}</tree> b <expr>((x))</expr> c')
    assert matcher.can_terminate()
    assert not compile_tags(spec, byte_vocab()).matcher().accept_string("<expr>((x)</expr>")


def test_overlapping_triggers_open_at_the_first_complete_one():
    """Trigger `a` completes before `<ab>` is written whole, so `<ab>` could never open (refused);
    once `ab` is complete, the `b!` that overlaps it cannot open instead."""
    with pytest.raises(TagSpecError) as err:
        compile_tags({"tags": [{"begin": "<ab>", "regex": "x", "end": "."}, {"begin": "a!", "regex": "y", "end": "."}],
                      "triggers": ["<ab>", "a"]}, byte_vocab())
    assert err.value.field == "tags[0].begin"
    spec = {"tags": [{"begin": "ab", "regex": "x", "end": "."}, {"begin": "b!", "regex": "y", "end": "."}],
            "triggers": ["ab", "b!"]}
    matcher = compile_tags(spec, byte_vocab()).matcher()
    assert matcher.accept_string("zab")  # `ab` opened
    assert not matcher.accept_string("!")  # ... so only its region's x may follow
    assert matcher.accept_string("x.b!y.")


# ---- regions or a text of its own constraint (`text`) -------------------------------------------

ANSWER_DOC = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 6}}, "required": ["answer"],
              "additionalProperties": False}
TEXT_SPEC = {**SPEC, "text": {"schema": ANSWER_DOC}}


@pytest.fixture(scope="module")
def text_grammar():
    return compile_tags(TEXT_SPEC, byte_vocab())


def walk_to_stop(grammar, vocab: Vocabulary, rng: random.Random, steps: int) -> bytes | None:
    """Random allowed tokens (often the forced continuation) until a stop token; None if none came."""
    matcher, out, stop = grammar.matcher(), bytearray(), vocab.stop_token_ids[0]
    for _ in range(steps):
        forced = matcher.find_jump_forward_string()
        if forced and rng.random() < 0.7:
            assert matcher.accept_string(forced)
            out += forced.encode()
            continue
        ids = np.flatnonzero(allowed(matcher, vocab)).tolist()
        token = stop if stop in ids and rng.random() < 0.3 else rng.choice([t for t in ids if t != stop] or ids)
        assert matcher.accept_token(token)
        if token == stop:
            return bytes(out)
        out += vocab.token_bytes[token]
    return None


def check_regions_or_text(output: bytes) -> str:
    """An output of TEXT_SPEC is regions only (whitespace between) or one valid answer document
    without a trigger; returns which."""
    text = output.decode("latin-1")
    if text.lstrip(" \t\r\n").startswith("<"):
        regions, between = parse_regions(text)
        assert regions and all(_valid(tag, body) for tag, body in regions)
        assert all(not piece.strip(" \t\r\n") for piece in between)
        return "regions"
    assert not any(t in text for t in TRIGGERS)
    jsonschema.validate(json.loads(output.decode("utf-8")), ANSWER_DOC)
    return "text"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_an_output_is_regions_or_one_valid_text(text_grammar, seed):
    output = walk_to_stop(text_grammar, byte_vocab(), random.Random(seed), 300)
    if output is not None:
        check_regions_or_text(output)


def test_random_outputs_reach_both_kinds(text_grammar):
    kinds = {check_regions_or_text(out) for seed in range(40)
             if (out := walk_to_stop(text_grammar, byte_vocab(), random.Random(seed), 300)) is not None}
    assert kinds == {"regions", "text"}


def test_a_text_never_holds_a_trigger_nor_mixes_with_regions(text_grammar):
    call = TOOL_BEGIN + '{"city": "Oslo"}}</tool_call>'
    for text, ok in [('{"answer": "hi"}', True), ('{"answer": "<answ"}', True), ('{"answer": "<tool_call>"}', False),
                     ("hello", False), (f" {call}\n{call} ", True), ('{"answer": "x"} ' + call, False),
                     (call + ' {"answer": "x"}', False), ("", False)]:
        matcher = text_grammar.matcher()
        assert (matcher.accept_string(text) and matcher.can_terminate()) == ok, text


# ---- bad specs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, field", [
    ({"tags": [{"begin": "<b>", "regex": "x", "end": "</b>"}], "triggers": ["<a>"]}, "tags[0].begin"),
    ({"tags": [ANSWER], "triggers": []}, "triggers"),
    ({"tags": [ANSWER]}, "triggers"),
    ({"tags": [ANSWER], "triggers": ["<a>", ""]}, "triggers[1]"),
    ({"tags": [ANSWER], "triggers": ["<a>", "<q>"]}, "triggers[1]"),
    ({"tags": [], "triggers": ["<a>"]}, "tags"),
    ({"tags": [{"begin": "<a>", "regex": "x", "schema": {}, "end": "</a>"}], "triggers": ["<a>"]}, "tags[0]"),
    ({"tags": [{"begin": "<a>", "end": "</a>"}], "triggers": ["<a>"]}, "tags[0]"),
    ({"tags": [{"begin": "<a>", "schema": {"type": "nonsense"}, "end": "</a>"}], "triggers": ["<a>"]},
     "tags[0].schema"),
    ({"tags": [{"begin": "<a>", "regex": "(", "end": "</a>"}], "triggers": ["<a>"]}, "tags[0].regex"),
    ({"tags": [{"begin": "<a>", "ebnf": "start: missing", "end": "</a>"}], "triggers": ["<a>"]}, "tags[0].ebnf"),
    ({"tags": [{"begin": "<a>", "regex": "x"}], "triggers": ["<a>"]}, "tags[0].end"),
    ({"tags": [{"begin": "<a>", "regex": "x", "end": "", "color": 1}], "triggers": ["<a>"]}, "tags[0].color"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "free_text": "yes"}, "free_text"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "stop_after": True}, "stop_after"),
    ("not a spec", "tags"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "text": {"schema": {}}, "free_text": True}, "free_text"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "text": {"regex": "x"}, "at_least_one": True}, "at_least_one"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "text": "x"}, "text"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "text": {"regex": "x", "schema": {}}}, "text"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "text": {"regex": "("}}, "text.regex"),
    ({"tags": [ANSWER], "triggers": ["<a>"], "text": {"ebnf": 'start: e\ne: "(" e ")" | "x"'}}, "text.ebnf"),
])
def test_bad_specs_name_the_field(spec, field):
    with pytest.raises(TagSpecError) as err:
        compile_tags(spec, byte_vocab())
    assert err.value.field == field
    assert str(err.value).startswith(field)


# ---- a real tokenizer ---------------------------------------------------------------------------

def test_deepseek_tokenizer_free_text_and_a_call():
    """On DeepSeek's 129k vocabulary: free text masks only special tokens and those that write the
    trigger and then leave the call's begin; a tokenized reply with a call walks through."""
    from conftest_grammar import deepseek_tokenizer, deepseek_vocab

    vocab = deepseek_vocab()
    begin = '<tool_call>\n{"name": "get_weather", "arguments": '
    spec = {"tags": [{"begin": begin, "schema": CITY, "end": "}\n</tool_call>"}], "triggers": ["<tool_call>"]}
    matcher = compile_tags(spec, vocab).matcher()
    got = allowed(matcher, vocab)
    rest = begin.encode()[len(b"<tool_call>"):]
    for token_id, token in enumerate(vocab.token_bytes):
        if token is None:
            expected = token_id in vocab.stop_token_ids
        elif b"<tool_call>" in token:
            after = token.split(b"<tool_call>", 1)[1]
            expected = rest.startswith(after)
        else:
            expected = True
        assert got[token_id] == expected, token
    reply = 'Sure, let me look. ' + begin + '{"city": "Paris", "days": 2}' + '}\n</tool_call> Anything else?'
    for token_id in deepseek_tokenizer().encode(reply, add_special_tokens=False).ids:
        assert allowed(matcher, vocab)[token_id] and matcher.accept_token(token_id)
    assert matcher.can_terminate()
