"""What happens to a sequence after it gets a sampled token: its grammar, logprobs, text and whether it stops.

Most tokens of most sequences need none of the checks: an unconstrained sequence without logprobs or stop
strings only has to learn its text, unless the token ends it (an EOS or stop token, or its length limit).
`prepare` gives every sequence what that test reads (`Sequence.stop_ids`, `length_limit`, `plain`), and
`NewTokens.process` runs the full checks only for the other tokens. A plain sequence whose client reads
nothing before it finishes (FINAL_ONLY outputs) does not even decode its text each step: its tokens wait
(`Sequence.text_lag`) and go through the detokenizer, in order, before anything reads the text or checks a
token that may end it (`catch_up_text`), so its text is the same as if each had been decoded at once. A plain
constrained FINAL_ONLY sequence (no logprobs, stop strings or jump-forward) defers its text the same way.
"""

from __future__ import annotations

from formwork.core.detokenizer import IncrementalDetokenizer
from formwork.core.metrics import EngineMetrics
from formwork.core.outputs import Logprob
from formwork.core.sampling_params import RequestOutputKind
from formwork.core.scheduler import Scheduler
from formwork.core.sequence import Request, Sequence, SequenceStatus
from formwork.core.structured_output import StructuredOutputManager
from formwork.grammar import Matcher


class NewTokens:
    """The engine's checks of newly sampled tokens (it owns one)."""

    def __init__(self, scheduler: Scheduler, structured_output: StructuredOutputManager, metrics: EngineMetrics,
                 eos_token_ids: list[int], max_model_len: int):
        self.scheduler = scheduler
        self.structured_output = structured_output
        self.metrics = metrics
        self.eos = frozenset(eos_token_ids)
        self.max_model_len = max_model_len

    def prepare(self, seq: Sequence) -> None:
        """Set what the per-token test of `seq` reads (once, when its request is added)."""
        params = seq.params
        seq.stop_ids = frozenset(params.stop_token_ids) | (frozenset() if params.ignore_eos else self.eos)
        limit = self.max_model_len
        if params.max_tokens is not None:
            limit = min(limit, seq.num_prompt_tokens + params.max_tokens)
        seq.length_limit = limit
        constraint = seq.request.structured_output
        simple = seq.logprobs is None and not params.stop_strings
        seq.plain = simple and constraint is None
        seq.plain_constrained = simple and constraint is not None and not constraint.enable_jump_forward
        seq.defers_text = (seq.plain or seq.plain_constrained) and params.output_kind is RequestOutputKind.FINAL_ONLY

    def process_all(self, seqs: list[Sequence], extras: dict[int, tuple]) -> list[tuple[Request, Exception]]:
        """`process` each of `seqs` (a step's), with the short paths inline: plain tokens, and the tokens of a
        plain constrained sequence that its grammar accepts without completing the output. Returns the
        requests whose processing raised, each with its first exception (their other sequences are skipped)."""
        failed: list[tuple[Request, Exception]] = []
        for seq in seqs:
            if failed and any(request is seq.request for request, _ in failed):
                continue  # a sequence of a request that failed this step
            try:
                if seq.plain:
                    token_ids = seq.token_ids
                    token_id = token_ids[-1]
                    if token_id >= 0 and token_id not in seq.stop_ids and len(token_ids) < seq.length_limit:
                        if seq.defers_text:
                            _defer_text(seq, len(token_ids))
                        else:
                            seq.detokenizer.append(token_id)
                        continue
                elif seq.plain_constrained:
                    token_ids = seq.token_ids
                    token_id = token_ids[-1]
                    if token_id >= 0 and token_id not in seq.stop_ids and len(token_ids) < seq.length_limit:
                        # not a stop token, so none of the constraint's extra stop tokens either
                        matcher = seq.matcher
                        ends = matcher.advance(token_id) if matcher is not None else 0
                        if ends:  # else `process` raises the violation
                            if ends == 2 and self.structured_output.matcher_is_complete(matcher):
                                self.process(seq, None, accepted=True)
                            elif seq.defers_text:
                                _defer_text(seq, len(token_ids))
                            else:
                                seq.detokenizer.append(token_id)
                            continue
                self.process(seq, extras.get(seq.seq_id) if extras else None)
            except Exception as exc:  # one request's bad state must not take the engine down
                failed.append((seq.request, exc))
        return failed

    @staticmethod
    def catch_up_text(seq: Sequence) -> None:
        """Decode the tokens whose text `seq` deferred (see the module docstring)."""
        if seq.text_lag:
            seq.detokenizer.extend(seq.token_ids[seq.text_from:seq.text_from + seq.text_lag])
            seq.text_lag = 0

    def process(self, seq: Sequence, extra: tuple[list | None, int | None] | None, accepted: bool = False) -> None:
        """After `seq` got a sampled token: its grammar (unless its matcher `accepted` it already), logprobs,
        text and whether it stops."""
        self.catch_up_text(seq)
        params = seq.request.params
        token_id = seq.token_ids[-1]
        if token_id < 0:
            raise RuntimeError("no token is allowed at this position (the constraint admits nothing)")
        constraint = seq.request.structured_output
        matcher = seq.matcher
        if matcher is not None and not accepted:
            self.structured_output.advance(matcher, constraint, token_id)
        detok: IncrementalDetokenizer = seq.detokenizer
        if seq.logprobs is not None:
            top, rank = extra if extra is not None else (None, None)
            entry = {token_id: Logprob(seq.last_token_logprob, rank, detok.decode_token(token_id))}
            for tid, lp, r in top or []:
                entry.setdefault(tid, Logprob(lp, r, detok.decode_token(tid)))
            seq.logprobs.append(entry)
        status, stop_reason = None, None
        may_stop = len(seq.token_ids) - seq.num_prompt_tokens >= params.min_tokens
        is_eos = token_id in self.eos and not params.ignore_eos
        is_stop_token = token_id in params.stop_token_ids
        if may_stop and (is_eos or is_stop_token):
            status = SequenceStatus.FINISHED_STOPPED
            stop_reason = token_id if is_stop_token else None
            if params.include_stop_str_in_output:
                detok.append(token_id)
        else:
            new_text = detok.append(token_id)
            stop = detok.check_stop(len(new_text)) if may_stop else None
            if stop is not None:
                status, stop_reason = SequenceStatus.FINISHED_STOPPED, stop
        if status is None and matcher is not None:
            status, stop_reason = self._advance_constrained(seq, matcher, constraint.enable_jump_forward)
        if status is None:
            num_tokens = len(seq.token_ids)
            max_tokens = params.max_tokens
            if ((max_tokens is not None and num_tokens - seq.num_prompt_tokens >= max_tokens)
                    or num_tokens >= self.max_model_len):
                status = SequenceStatus.FINISHED_LENGTH
        if status is not None:
            if not isinstance(stop_reason, str):
                stop = detok.check_stop(len(detok.flush())) if may_stop else None
                if stop is not None:
                    status, stop_reason = SequenceStatus.FINISHED_STOPPED, stop
            seq.stop_reason = stop_reason
            self.scheduler.finish(seq, status)

    def _advance_constrained(self, seq: Sequence, matcher: Matcher, jump_forward: bool
                             ) -> tuple[SequenceStatus | None, str | None]:
        """After a constrained token: stop if the document is complete (even with `ignore_eos` or
        before `min_tokens`: nothing else may follow), else append the forced continuation."""
        so = self.structured_output
        if so.matcher_is_complete(matcher):
            return SequenceStatus.FINISHED_STOPPED, None
        if not jump_forward:
            return None, None
        room = self.max_model_len - seq.num_tokens
        if seq.params.max_tokens is not None:
            room = min(room, seq.params.max_tokens - seq.num_output_tokens)
        forced = so.jump_forward(seq, room)
        for i, token_id in enumerate(forced):
            seq.append_token(token_id, 0.0)
            seq.request.metrics.num_generation_tokens += 1
            self.metrics.on_new_tokens(1, None)
            new_text = seq.detokenizer.append(token_id)
            may_stop = seq.num_output_tokens >= seq.params.min_tokens
            stop = seq.detokenizer.check_stop(len(new_text)) if may_stop else None
            if stop is not None:
                matcher.rollback(len(forced) - i - 1)
                return SequenceStatus.FINISHED_STOPPED, stop
        if forced and so.matcher_is_complete(matcher):
            return SequenceStatus.FINISHED_STOPPED, None
        return None, None


def _defer_text(seq: Sequence, num_tokens: int) -> None:
    """Let the token at `num_tokens - 1` wait for the detokenizer (see the module docstring)."""
    if seq.text_lag:
        seq.text_lag += 1
    else:
        seq.text_from, seq.text_lag = num_tokens - 1, 1
