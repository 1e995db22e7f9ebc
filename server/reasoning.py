"""Reasoning parsers (`formwork serve --reasoning-parser`): a reply's thinking becomes
`reasoning_content`, the rest `content`, as vLLM returns them.

* ``deepseek_r1``: the reply starts inside its thinking (the template may have opened `<think>`
  in the prompt; a `<think>` the model writes first is dropped) up to the first `</think>`.
* ``qwen3``: the reply thinks only when it opens with `<think>`; otherwise it is all content (as
  with `enable_thinking=False`, whose template closes the thinking in the prompt).

A reply cut before `</think>` is all reasoning, with no content. An empty part is None.
"""
from __future__ import annotations

from dataclasses import dataclass, field

THINK_START, THINK_END = "<think>", "</think>"
REASONING_PARSERS = ("deepseek_r1", "qwen3")


@dataclass(frozen=True)
class ReasoningParser:
    """Splits replies of one model family (`name` in REASONING_PARSERS) into reasoning and content."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in REASONING_PARSERS:
            raise ValueError(f"unknown reasoning parser {self.name!r}; known: {list(REASONING_PARSERS)}")

    @property
    def starts_thinking(self) -> bool:
        """Whether a reply without `<think>` is thinking from its first character."""
        return self.name == "deepseek_r1"

    def split(self, text: str) -> tuple[str | None, str | None]:
        """(reasoning_content, content) of a whole reply."""
        opened = text.startswith(THINK_START)
        if not opened and not self.starts_thinking:
            return None, text or None
        reasoning, end, content = text.removeprefix(THINK_START).partition(THINK_END)
        return reasoning or None, (content if end else "") or None

    def stream(self) -> "ReasoningStream":
        return ReasoningStream(self)


@dataclass
class _Choice:
    """Where one streamed choice is: `pending` text not yet sent (it may start a tag)."""

    state: str  # "start" (may open with <think>), "thinking" or "content"
    pending: str = ""


@dataclass
class ReasoningStream:
    """Splits the text deltas of streamed choices, holding back only what may start a tag."""

    parser: ReasoningParser
    _choices: dict[int, _Choice] = field(default_factory=dict)

    def split(self, index: int, delta: str, final: bool) -> tuple[str, str]:
        """(reasoning delta, content delta) for choice `index`'s new text; `final`: its last delta."""
        choice = self._choices.setdefault(index, _Choice("start"))
        text = choice.pending + delta
        choice.pending = ""
        if choice.state == "start":
            if THINK_START.startswith(text) and not final:
                choice.pending = text
                return "", ""
            opened = text.startswith(THINK_START)
            choice.state = "thinking" if opened or self.parser.starts_thinking else "content"
            text = text.removeprefix(THINK_START)
        if choice.state == "content":
            return "", text
        reasoning, end, content = text.partition(THINK_END)
        if end:
            choice.state = "content"
            return reasoning, content
        held = 0 if final else _partial_tag_length(reasoning)
        choice.pending = reasoning[len(reasoning) - held:]
        return reasoning[: len(reasoning) - held], ""


def _partial_tag_length(text: str) -> int:
    """The length of the longest end of `text` that is a proper prefix of `</think>`."""
    for size in range(min(len(THINK_END) - 1, len(text)), 0, -1):
        if THINK_END.startswith(text[-size:]):
            return size
    return 0
