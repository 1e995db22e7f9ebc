"""The `RequestOutput` of a request after a step, in the shape its `RequestOutputKind` asks for.

CUMULATIVE outputs hold everything generated so far; DELTA outputs only what is new since the request's
previous output (each sequence remembers how much it has handed out); FINAL_ONLY requests get no output
until they finish, and then a cumulative one.
"""

from __future__ import annotations

from formwork.core.outputs import CompletionOutput, RequestOutput
from formwork.core.sampling_params import RequestOutputKind
from formwork.core.sequence import Request, Sequence

_DELTA = RequestOutputKind.DELTA
_FINAL_ONLY = RequestOutputKind.FINAL_ONLY


def step_output(request: Request) -> RequestOutput | None:
    """The output a step returns for `request` (None for an unfinished FINAL_ONLY request)."""
    kind = request.params.output_kind
    if kind is _FINAL_ONLY and not request.is_finished:
        return None
    return _output(request, kind is _DELTA)


def request_output(request: Request) -> RequestOutput:
    """`request`'s output now: a delta for DELTA requests, else cumulative."""
    return _output(request, request.params.output_kind is _DELTA)


def _output(request: Request, delta: bool) -> RequestOutput:
    """The request's output; it is finished when every completion has a finish reason."""
    completion = _delta_completion if delta else _cumulative_completion
    seqs = request.seqs
    if len(seqs) == 1:  # n = 1, most requests
        only = completion(seqs[0])
        completions, finished = [only], only.finish_reason is not None
    else:
        completions = [completion(seq) for seq in seqs]
        finished = all(output.finish_reason is not None for output in completions)
    metrics = request.metrics
    return RequestOutput(request.request_id, request.prompt, request.prompt_token_ids, completions, finished, metrics,
                         request.error, metrics.num_cached_tokens)


def _cumulative_completion(seq: Sequence) -> CompletionOutput:
    status = seq.status
    finished = status.is_finished
    logprobs = seq.logprobs
    return CompletionOutput(seq.index, seq.detokenizer.visible_text(finished), seq.token_ids[seq.num_prompt_tokens:],
                            None if logprobs is None else seq.cumulative_logprob,
                            None if logprobs is None else list(logprobs), status._value_ if finished else None,
                            seq.stop_reason)


def _delta_completion(seq: Sequence) -> CompletionOutput:
    """What `seq` generated since its previous output; advances its handed-out counts."""
    status = seq.status
    finished = status.is_finished
    text = seq.detokenizer.visible_text(finished)  # only grows: a stop string is cut after the held-back tail
    new_text = text[seq.num_sent_chars:]
    new_tokens = seq.token_ids[seq.num_prompt_tokens + seq.num_sent_tokens:]
    seq.num_sent_chars = len(text)
    seq.num_sent_tokens += len(new_tokens)
    logprobs = seq.logprobs
    new_logprobs = None
    if logprobs is not None:
        new_logprobs = logprobs[seq.num_sent_logprobs:]
        seq.num_sent_logprobs = len(logprobs)
    return CompletionOutput(seq.index, new_text, new_tokens, None if logprobs is None else seq.cumulative_logprob,
                            new_logprobs, status._value_ if finished else None, seq.stop_reason)
