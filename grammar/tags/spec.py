"""The `tags` spec: its dict form checked field by field into `TagsSpec` (errors name the field)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from formwork.grammar.errors import GrammarError

CONSTRAINT_KINDS = ("schema", "regex", "ebnf")
TAG_KEYS = ("begin", "end", *CONSTRAINT_KINDS)
FLAGS = {"free_text": True, "at_least_one": False, "stop_after_first": False}  # flag -> default
SPEC_KEYS = ("tags", "triggers", "text", *FLAGS)


class TagSpecError(GrammarError):
    """A `tags` spec is malformed; `field` names the part at fault (e.g. ``tags[1].begin``)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class Tag:
    """One kind of region: `begin`, text of the constraint (`kind` is one of CONSTRAINT_KINDS),
    `end`.  `trigger` is the trigger that opens it (the shortest one its begin starts with)."""

    begin: str
    end: str
    kind: str
    constraint: Any
    trigger: str


@dataclass(frozen=True)
class TextRule:
    """The constraint of the text an output without regions is made of (`kind` as a tag's)."""

    kind: str
    constraint: Any


@dataclass(frozen=True)
class TagsSpec:
    """A checked `tags` spec; `key` is its canonical text (the compiled-grammar cache key)."""

    tags: tuple[Tag, ...]
    triggers: tuple[str, ...]
    free_text: bool
    at_least_one: bool
    stop_after_first: bool
    key: str
    text: TextRule | None = None


def parse_tags_spec(spec: Any) -> TagsSpec:
    """Check a `tags` spec (see `formwork.grammar.tags`); raises `TagSpecError` naming the field."""
    if not isinstance(spec, Mapping):
        raise TagSpecError("tags", f"the spec is an object, not {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise TagSpecError(unknown[0], f"unknown field; the fields are {list(SPEC_KEYS)}")
    text = _text_rule(spec)
    defaults = {**FLAGS, "free_text": False} if text is not None else FLAGS
    flags = {name: _flag(spec, name, default) for name, default in defaults.items()}
    if text is not None:
        for name in ("free_text", "at_least_one"):
            if flags[name]:
                raise TagSpecError(name, "cannot be true with 'text' (an output is either regions only or "
                                         "one text of that constraint)")
    triggers = _triggers(spec.get("triggers"))
    raw_tags = spec.get("tags")
    if not isinstance(raw_tags, (list, tuple)) or not raw_tags:
        raise TagSpecError("tags", "needs a non-empty list of regions")
    tags = tuple(_tag(raw, f"tags[{i}]", triggers) for i, raw in enumerate(raw_tags))
    for j, trigger in enumerate(triggers):
        if not any(tag.begin.startswith(trigger) for tag in tags):
            raise TagSpecError(f"triggers[{j}]", f"{trigger!r} starts no tag's begin (once written it "
                                                 f"could never be continued)")
    canonical = {"tags": [_canonical(tag) for tag in tags], "triggers": list(triggers), **flags}
    if text is not None:
        canonical["text"] = {text.kind: text.constraint}
    key = json.dumps(canonical, sort_keys=True, ensure_ascii=False)
    return TagsSpec(tags, triggers, key=key, text=text, **flags)


def _text_rule(spec: Mapping) -> TextRule | None:
    raw = spec.get("text")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or len(raw) != 1 or next(iter(raw)) not in CONSTRAINT_KINDS:
        raise TagSpecError("text", f"must be an object with one constraint of {list(CONSTRAINT_KINDS)}, got {raw!r}")
    kind, constraint = next(iter(raw.items()))
    _check_constraint(kind, constraint, f"text.{kind}")
    return TextRule(kind, constraint)


def _flag(spec: Mapping, name: str, default: bool) -> bool:
    value = spec.get(name, default)
    if not isinstance(value, bool):
        raise TagSpecError(name, f"must be true or false, got {value!r}")
    return value


def _triggers(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, (list, tuple)) or not raw:
        raise TagSpecError("triggers", "needs a non-empty list of strings")
    for j, trigger in enumerate(raw):
        if not isinstance(trigger, str) or not trigger:
            raise TagSpecError(f"triggers[{j}]", f"must be a non-empty string, got {trigger!r}")
    if len(set(raw)) != len(raw):
        raise TagSpecError("triggers", "lists a trigger twice")
    return tuple(raw)


def _tag(raw: Any, where: str, triggers: tuple[str, ...]) -> Tag:
    if not isinstance(raw, Mapping):
        raise TagSpecError(where, f"a region is an object, not {type(raw).__name__}")
    unknown = sorted(set(raw) - set(TAG_KEYS))
    if unknown:
        raise TagSpecError(f"{where}.{unknown[0]}", f"unknown field; a region has {list(TAG_KEYS)}")
    begin, end = raw.get("begin"), raw.get("end")
    if not isinstance(begin, str) or not begin:
        raise TagSpecError(f"{where}.begin", f"must be a non-empty string, got {begin!r}")
    if not isinstance(end, str):
        raise TagSpecError(f"{where}.end", f"must be a string, got {end!r}")
    kinds = [kind for kind in CONSTRAINT_KINDS if raw.get(kind) is not None]
    if len(kinds) != 1:
        raise TagSpecError(where, f"needs exactly one constraint of {list(CONSTRAINT_KINDS)}, got "
                                  f"{kinds or 'none'}")
    kind = kinds[0]
    constraint = raw[kind]
    _check_constraint(kind, constraint, f"{where}.{kind}")
    return Tag(begin, end, kind, constraint, _trigger_of(begin, where, triggers))


def _check_constraint(kind: str, constraint: Any, where: str) -> None:
    if kind == "schema" and not isinstance(constraint, (dict, bool)):
        raise TagSpecError(where, f"a JSON Schema is an object or a boolean, not {type(constraint).__name__}")
    if kind != "schema" and (not isinstance(constraint, str) or not constraint):
        raise TagSpecError(where, f"must be a non-empty string, got {constraint!r}")


def _trigger_of(begin: str, where: str, triggers: tuple[str, ...]) -> str:
    """The trigger that opens a region written `begin`: the first to be complete as it is
    written (the shortest of those it starts with); no other trigger may complete before it."""
    starts = [t for t in triggers if begin.startswith(t)]
    if not starts:
        raise TagSpecError(f"{where}.begin", f"{begin!r} starts with none of the triggers {list(triggers)}")
    trigger = min(starts, key=len)
    for other in triggers:
        at = trigger.find(other)
        if other != trigger and 0 <= at and at + len(other) < len(trigger):
            raise TagSpecError(f"{where}.begin", f"trigger {other!r} is complete inside {trigger!r} "
                                                 f"before it, so this region could never open")
    return trigger


def _canonical(tag: Tag) -> dict:
    return {"begin": tag.begin, "end": tag.end, tag.kind: tag.constraint}
