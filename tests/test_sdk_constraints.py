"""Typed outputs' constraints are enforced by the grammar, so pydantic's validation after `stop` cannot
fail for them: for each constraint kind the masks never allow a violating value, and every document
a random walk through the masks of a generated `Annotated` type completes is valid to pydantic."""
from __future__ import annotations

import datetime
import decimal
import uuid
import json
from typing import Annotated, Any, Literal

import numpy as np
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter

from formwork.core.demo import DEMO_MODEL_DIR
from formwork.grammar import Vocabulary, allocate_token_bitmask, compile_json_schema
from formwork.sdk.output_types import OutputFormat, output_format

VOCAB = Vocabulary.from_pretrained(DEMO_MODEL_DIR)
CLOSERS = set(b'"]},')


def complete(fmt: OutputFormat, text: str) -> bool:
    """The grammar of `fmt` takes `text` as a whole document (every byte allowed, then a stop)."""
    matcher = compile_json_schema(fmt.schema, VOCAB).matcher()
    return matcher.accept_string(text) and matcher.can_terminate()


def valid(tp: Any, text: str) -> bool:
    try:
        TypeAdapter(tp).validate_json(text)
    except pydantic.ValidationError:
        return False
    return True


# (constraint kind, type, a value pydantic refuses, a value it accepts)
KINDS = [
    ("ge", Annotated[int, Field(ge=5)], "4", "5"),
    ("le", Annotated[int, Field(le=5)], "6", "5"),
    ("gt", Annotated[float, Field(gt=1.5)], "1.5", "1.50001"),
    ("lt", Annotated[float, Field(lt=1)], "0.99999999999999999", "0.9"),
    ("lt-int", Annotated[int, Field(lt=-3)], "-3", "-4"),
    ("multiple_of", Annotated[int, Field(multiple_of=3)], "10", "-9"),
    ("min_length", Annotated[str, Field(min_length=2)], '"a"', '"ab"'),
    ("max_length", Annotated[str, Field(max_length=2)], '"abc"', '"ab"'),
    ("pattern", Annotated[str, Field(pattern=r"^[a-c]+\d$")], '"abd"', '"ab1"'),
    ("min_items", Annotated[list[int], Field(min_length=2)], "[1]", "[1, 2]"),
    ("max_items", Annotated[list[int], Field(max_length=1)], "[1, 2]", "[1]"),
    ("decimal le", Annotated[decimal.Decimal, Field(le=2)], "2.01", "1.5"),
    ("decimal lt", Annotated[decimal.Decimal, Field(lt=2)], "1.99999999999999999999", "1.9"),
    ("decimal", decimal.Decimal, '"ten"', '"-0.1000000000000000000001"'),
    ("format date", datetime.date, '"0000-01-01"', '"0001-01-01"'),
    ("format date-time", datetime.datetime, '"2024-01-01T23:59:60Z"', '"2024-01-01T23:59:59Z"'),
    ("format time", datetime.time, '"23:59:60Z"', '"23:59:59Z"'),
    ("format duration", datetime.timedelta, '"P1234567890D"', '"P123456D"'),
    ("literal keys", dict[Literal["a", "b"], int], '{"c": 1}', '{"b": 1}'),
    ("pattern keys", dict[Annotated[str, Field(pattern="^k")], int], '{"x": 1}', '{"k1": 1}'),
    ("min_length keys", dict[Annotated[str, Field(min_length=2)], int], '{"x": 1}', '{"xy": 1}'),
    ("issue 25", list[Annotated[int, Field(ge=0, le=99)]], "[80, 731, 59]", "[80, 31, 59]"),
]


@pytest.mark.parametrize("kind, tp, bad, good", KINDS, ids=[k[0] for k in KINDS])
def test_grammar_enforces_each_constraint_kind(kind, tp, bad, good):
    fmt = output_format(tp)
    assert not valid(tp, bad) and valid(tp, good)  # the examples mean what they claim
    assert not complete(fmt, bad), f"the grammar allows {bad!r}, which pydantic refuses ({kind})"
    assert complete(fmt, good)
    assert fmt.parse(good) == TypeAdapter(tp).validate_json(good)


# ---- generated Annotated types -------------------------------------------------------------------

@st.composite
def int_types(draw: st.DrawFn) -> Any:
    """Integers with some of ge/gt, le/lt, multiple_of; the range always holds a multiple."""
    low, high = draw(st.integers(-1000, 1000)), draw(st.integers(10, 500))
    options = draw(st.fixed_dictionaries({}, optional={
        "low": st.sampled_from([{"ge": low}, {"gt": low}]), "high": st.sampled_from([{"le": low + high}, {"lt": low + high}]),
        "multiple_of": st.sampled_from([1, 2, 3, 5])}))
    return Annotated[int, Field(**options.pop("low", {}), **options.pop("high", {}), **options)]


@st.composite
def float_types(draw: st.DrawFn) -> Any:
    low = draw(st.integers(-100, 100)) / draw(st.sampled_from([1, 4, 10]))
    high = low + draw(st.integers(1, 100)) / draw(st.sampled_from([1, 8, 10]))
    options = draw(st.fixed_dictionaries({}, optional={
        "low": st.sampled_from([{"ge": low}, {"gt": low}]), "high": st.sampled_from([{"le": high}, {"lt": high}])}))
    return Annotated[float, Field(**options.pop("low", {}), **options.pop("high", {}))]


@st.composite
def str_types(draw: st.DrawFn) -> Any:
    """Strings with max_length (so walks end) and some of min_length and a pattern."""
    low = draw(st.integers(0, 4))
    options = draw(st.fixed_dictionaries({"max_length": st.integers(max(low, 2), low + 6)}, optional={
        "min_length": st.just(low), "pattern": st.sampled_from([r"^[a-f]*$", r"^x", r"\d", r"^[A-Z][a-z]*$"])}))
    return Annotated[str, Field(**options)]


@st.composite
def list_types(draw: st.DrawFn) -> Any:
    item = draw(st.one_of(int_types(), str_types()))
    low = draw(st.integers(0, 2))
    options = draw(st.fixed_dictionaries({"max_length": st.integers(low, low + 2)},
                                         optional={"min_length": st.just(low)}))
    return Annotated[list[item], Field(**options)]


ANNOTATED_TYPES = st.one_of(int_types(), float_types(), str_types(), list_types())


def random_document(fmt: OutputFormat, data: st.DataObject, max_steps: int = 40) -> str | None:
    """A walk through the grammar's masks: each step draws an allowed token (closing tokens and stops
    more often as the walk goes on); the text when a stop is drawn, None if it runs out of steps."""
    matcher = compile_json_schema(fmt.schema, VOCAB).matcher()
    bitmask = allocate_token_bitmask(1, VOCAB.vocab_size)
    stops = set(VOCAB.stop_token_ids)
    tokens: list[int] = []
    for step in range(max_steps):
        matcher.fill_next_token_bitmask(bitmask, 0)
        words = bitmask[0].numpy().view(np.uint32)
        allowed = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[:VOCAB.vocab_size]
        assert len(allowed), "a mask that allows nothing"
        ending = [t for t in allowed if t in stops]
        closing = [t for t in allowed if VOCAB.token_bytes[t] and set(VOCAB.token_bytes[t]) <= CLOSERS]
        if ending and data.draw(st.booleans()):
            return VOCAB.decode(tokens).decode("utf-8")
        pool = closing if closing and data.draw(st.integers(0, max_steps)) < step else allowed
        token = int(data.draw(st.sampled_from(pool)))
        if token in stops:
            return VOCAB.decode(tokens).decode("utf-8")
        assert matcher.accept_token(token)
        tokens.append(token)
    return None


@settings(deadline=None, max_examples=120, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tp=ANNOTATED_TYPES, data=st.data())
def test_documents_the_masks_allow_are_valid_to_pydantic(tp, data):
    fmt = output_format(tp)
    text = random_document(fmt, data)
    if text is not None:
        fmt.parse(text)  # raises OutputValidationError, naming the field, if pydantic refuses it


def candidate_texts(tp: Any) -> st.SearchStrategy[str]:
    """JSON texts near the type's constraints: small numbers, short strings, short lists."""
    scalars = st.one_of(st.integers(-1100, 1100).map(str),
                        st.decimals(-110, 110, places=3, allow_nan=False).map(lambda d: format(d, "f")),
                        st.text("abcfxA1", max_size=9).map(json.dumps))
    return st.one_of(scalars, st.lists(scalars, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"))


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(tp=ANNOTATED_TYPES, data=st.data())
def test_texts_the_grammar_takes_are_valid_to_pydantic(tp, data):
    fmt = output_format(tp)
    text = data.draw(candidate_texts(tp))
    if complete(fmt, text):
        assert valid(tp, text), f"the grammar takes {text!r}, which pydantic refuses as {tp}"


FORMAT_TYPES = [datetime.datetime, datetime.date, datetime.time, datetime.timedelta, uuid.UUID, decimal.Decimal,
                Annotated[decimal.Decimal, Field(ge=0, lt=100)], Annotated[float, Field(gt=-1, lt=1)]]


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tp=st.sampled_from(FORMAT_TYPES), data=st.data())
def test_formats_the_masks_allow_are_valid_to_pydantic(tp, data):
    """Dates, times, durations, UUIDs and decimals: the grammar's format languages sit inside what
    pydantic parses."""
    text = random_document(output_format(tp), data, max_steps=60)
    if text is not None:
        output_format(tp).parse(text)


@pytest.fixture(scope="module")
def demo_llm():
    from formwork.sdk import LLM

    return LLM()


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(tp=ANNOTATED_TYPES, seed=st.integers(0, 2**31 - 1))
def test_values_the_llm_returns_satisfy_pydantic(demo_llm, tp, seed):
    """Through `LLM.generate` on the demo model, sampled: the value is valid to pydantic (a value that
    were not would raise OutputValidationError), or the output ran into max_tokens."""
    from formwork.sdk.errors import TruncatedOutputError

    try:
        value = demo_llm.generate("Give me one:", output_type=tp, temperature=1.0, seed=seed, max_tokens=48)
    except TruncatedOutputError:
        return
    assert TypeAdapter(tp).validate_python(value) == value
