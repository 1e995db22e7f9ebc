"""Helpers for the exactness property tests of JSON Schema keywords: the matcher accepts a compact
spelling of an instance exactly when `jsonschema` says it is valid (any member order, since the
grammar fixes one: `matcher_accepts`)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

import jsonschema

sys.path.insert(0, str(Path(__file__).parent))
from conftest_grammar_json import byte_vocab  # noqa: E402
from json_spelling_search import scalar_texts  # noqa: E402

from formwork.grammar.json_schema import compile_json_schema  # noqa: E402

VALIDATORS = {"2020-12": jsonschema.Draft202012Validator, "draft-07": jsonschema.Draft7Validator}


MAX_SEARCH_STEPS = 200_000  # matcher steps one spelling search may take


def matcher_accepts(grammar: Any, instance: Any) -> bool:
    """Whether the matcher accepts one of the instance's compact spellings (any member order,
    ``1.0`` as ``1``, escaped or raw characters).  A depth-first search that advances one matcher
    part by part and rolls back a part that leads nowhere, so a wrong member order is cut at its
    key (a fixed list of spellings misses the one accepted order of a nested instance with many
    objects); iterative, as an instance may have more parts than Python nests calls.  Unlike
    `json_spelling_search` (the corpora's search over automaton states, guided by the schema's
    property order), it tries every member order, on any grammar the matcher runs."""
    m = grammar.matcher()
    choices: list[Iterator[tuple[str, Any]]] = []  # each but the last has one part accepted
    tasks: Any = (instance, None)  # what is left to spell: a linked list of `_parts` tasks
    steps = 0
    while True:
        if tasks is None and m.can_terminate():
            return True
        choices.append(_parts(tasks))
        while True:
            for text, after in choices[-1]:
                steps += 1
                if steps > MAX_SEARCH_STEPS:
                    raise AssertionError(f"the spelling search took more than {MAX_SEARCH_STEPS} steps")
                if m.accept_string(text):
                    tasks = after
                    break
            else:  # no part leads on: undo the part before
                choices.pop()
                if not choices:
                    return False
                m.rollback(1)
                continue
            break


class _Members:
    """The members of an object still to spell (`first`: none spelled yet)."""

    def __init__(self, left: list[tuple[str, Any]], first: bool) -> None:
        self.left, self.first = left, first


class _Text:
    """Literal texts, one of which comes next."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts


def _parts(tasks: Any) -> Iterator[tuple[str, Any]]:
    """The texts that may come next, each with the tasks left after it (none at the end)."""
    if tasks is None:
        return
    task, rest = tasks
    if isinstance(task, _Text):
        yield from ((text, rest) for text in task.texts)
    elif isinstance(task, _Members):
        if not task.left:
            yield "}", rest
            return
        comma = "" if task.first else ","
        for i, (name, value) in enumerate(task.left):
            after = (value, (_Members(task.left[:i] + task.left[i + 1:], False), rest))
            for key in dict.fromkeys([json.dumps(name), json.dumps(name, ensure_ascii=False)]):
                yield comma + key + ":", after
    elif isinstance(task, dict):
        yield "{", (_Members(list(task.items()), True), rest)
    elif isinstance(task, list):
        after = (_Text(["]"]), rest)
        for i in reversed(range(len(task))):
            after = (task[i], after) if i == 0 else (_Text([","]), (task[i], after))
        yield "[", after
    else:
        yield from ((text, rest) for text in scalar_texts(task, True))


def assert_exact(schema: Any, instances: list[Any], draft: str = "2020-12", **options: Any) -> None:
    """Compile `schema` (with `options`) and check every instance against jsonschema's verdict."""
    grammar = compile_json_schema(schema, byte_vocab(), draft=draft, **options)
    cls = VALIDATORS[draft]
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)  # formwork asserts formats
    for instance in instances:
        expected = validator.is_valid(instance)
        got = matcher_accepts(grammar, instance)
        assert got == expected, (f"schema {json.dumps(schema)}: instance {json.dumps(instance)} "
                                 f"is {'valid' if expected else 'invalid'} but the matcher "
                                 f"{'accepts' if got else 'rejects'} it")
