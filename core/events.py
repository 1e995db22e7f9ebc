"""Stream events of one request, derived from its successive cumulative `RequestOutput`s."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from formwork.core.outputs import RequestOutput, SampleLogprobs


class RequestFailedError(RuntimeError):
    """A request ended with an error inside the engine (it failed alone)."""


class EventKind(enum.Enum):
    ACCEPTED = "accepted"        # the engine thread queued the request
    FIRST_TOKEN = "first_token"  # the request's first generated token arrived (a DELTA follows)
    DELTA = "delta"              # new text / token ids / logprobs of one completion
    USAGE = "usage"              # token counts, just before FINISHED
    FINISHED = "finished"        # every completion ended (stop or length); terminal
    CANCELLED = "cancelled"      # aborted; terminal
    FAILED = "failed"            # error (bad request inside the engine, engine death); terminal


TERMINAL = {EventKind.FINISHED, EventKind.CANCELLED, EventKind.FAILED}


@dataclass
class Usage:
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class StreamEvent:
    """One event. `output` (the cumulative RequestOutput) rides on the last event made from it."""

    kind: EventKind
    request_id: str
    index: int | None = None
    text: str = ""
    token_ids: list[int] = field(default_factory=list)
    logprobs: SampleLogprobs | None = None
    finish_reason: str | None = None
    stop_reason: int | str | None = None
    usage: Usage | None = None
    error: str | None = None
    output: RequestOutput | None = None

    @property
    def is_terminal(self) -> bool:
        return self.kind in TERMINAL


@dataclass
class CompletionProgress:
    """How much of one completion a stream has already sent."""

    text_len: int = 0
    num_tokens: int = 0
    num_logprobs: int = 0
    finish_sent: bool = False


@dataclass
class StreamState:
    first_token_sent: bool = False
    completions: dict[int, CompletionProgress] = field(default_factory=dict)


def events_from_output(output: RequestOutput, state: StreamState) -> list[StreamEvent]:
    """The events that take a stream from what `state` says was sent to `output`; updates `state`."""
    rid = output.request_id
    events: list[StreamEvent] = []
    for completion in output.outputs:
        progress = state.completions.setdefault(completion.index, CompletionProgress())
        new_text = completion.text[progress.text_len:]
        new_ids = completion.token_ids[progress.num_tokens:]
        new_logprobs = None
        if completion.logprobs is not None:
            new_logprobs = completion.logprobs[progress.num_logprobs:]
        finishing = completion.finish_reason is not None and not progress.finish_sent
        if not (new_text or new_ids or finishing):
            continue
        if new_ids and not state.first_token_sent:
            state.first_token_sent = True
            events.append(StreamEvent(EventKind.FIRST_TOKEN, rid))
        events.append(StreamEvent(
            EventKind.DELTA, rid, index=completion.index, text=new_text, token_ids=list(new_ids),
            logprobs=new_logprobs, finish_reason=completion.finish_reason if finishing else None,
            stop_reason=completion.stop_reason if finishing else None))
        progress.text_len = max(progress.text_len, len(completion.text))
        progress.num_tokens = len(completion.token_ids)
        progress.num_logprobs = len(completion.logprobs or [])
        progress.finish_sent = progress.finish_sent or finishing
    if output.error is not None:
        events.append(StreamEvent(EventKind.FAILED, rid, error=output.error))
    elif output.finished:
        completion_tokens = sum(len(c.token_ids) for c in output.outputs)
        events.append(StreamEvent(EventKind.USAGE, rid, usage=Usage(len(output.prompt_token_ids), completion_tokens)))
        events.append(StreamEvent(EventKind.FINISHED, rid))
    if events:
        events[-1].output = output
    return events
