"""Tagged regions: free text in which trigger strings open regions bound to their own constraint.

    grammar = compile_tags({
        "tags": [{"begin": "<answer>", "regex": "[0-9]+", "end": "</answer>"},
                 {"begin": "<tool_call>\\n", "schema": {...}, "end": "\\n</tool_call>"}],
        "triggers": ["<answer>", "<tool_call>"],
        "free_text": True, "at_least_one": False, "stop_after_first": False,
    }, vocab)

Each tag's constraint is one of ``schema`` (JSON Schema), ``regex``, ``ebnf`` (Lark or GBNF);
its begin must start with a trigger.  In free text every token is allowed but those that
complete a trigger and go on in a way no region allows; once the first trigger is complete the
output goes on with a begin that starts with it, the region's language and its end string, then
free text again.  `free_text` False: only regions, separated by whitespace; `at_least_one`: the
output may not end before a region has closed; `stop_after_first`: it ends when the first region
closes.  `text` (a constraint object, e.g. ``{"schema": {...}}``): the output is either regions only
(whitespace between) or, with none, one text of that constraint in which no trigger occurs (a JSON
Schema's open values nest a bounded depth there; a recursive one is refused).  A stop token is
allowed in free text (unless `at_least_one` is unmet), never inside a region.  Bad specs raise `TagSpecError` naming the field.  `thinking_then` wraps any constraint for
a reasoning model (free thinking up to ``</think>``, then the constraint).

Where a region's language can itself contain its end string (say, inside a JSON string), the
masks allow both readings; the region is the shortest one that validates.
"""
from formwork.grammar.tags.compile import (
    THINK_END, Lowered, compile_lowered, compile_tags, lower_tags, thinking_then,
)
from formwork.grammar.tags.language import Region, tags_language
from formwork.grammar.tags.spec import Tag, TagSpecError, TagsSpec, parse_tags_spec

__all__ = [
    "THINK_END", "Lowered", "Region", "Tag", "TagSpecError", "TagsSpec", "compile_lowered", "compile_tags",
    "lower_tags", "parse_tags_spec", "tags_language", "thinking_then",
]
