"""What makes a request unservable, checked before it is queued: the typed errors and `check_request`."""

from __future__ import annotations

from formwork.core.sampling_params import SamplingParams


class RequestError(ValueError):
    """A request cannot be accepted (it fails alone; the engine keeps running)."""


class InvalidPromptError(RequestError):
    """The prompt is empty or holds token ids outside the vocabulary."""


class PromptTooLongError(RequestError):
    """The prompt leaves no room to generate within max_model_len."""


class VocabularyRangeError(RequestError):
    """Sampling parameters name token ids outside the model's vocabulary."""


class DuplicateRequestError(RequestError):
    """A live request already has this request_id."""


def check_request(token_ids: list[int], params: SamplingParams, vocab_size: int, max_model_len: int) -> None:
    """Raise a `RequestError` if this prompt and these parameters cannot be served."""
    if not token_ids:
        raise InvalidPromptError("the prompt is empty")
    bad = [t for t in token_ids if not isinstance(t, int) or not 0 <= t < vocab_size]
    if bad:
        raise InvalidPromptError(f"prompt token ids {bad[:5]} are outside the vocabulary [0, {vocab_size})")
    if len(token_ids) >= max_model_len:
        raise PromptTooLongError(
            f"the prompt has {len(token_ids)} tokens; this model's maximum context length is "
            f"{max_model_len} tokens, so at most {max_model_len - 1} prompt tokens fit")
    named = [("stop_token_ids", t) for t in params.stop_token_ids]
    named += [("logit_bias", t) for t in params.logit_bias or ()]
    outside = [(field, t) for field, t in named if t >= vocab_size]
    if outside:
        field, token_id = outside[0]
        raise VocabularyRangeError(f"{field} names token id {token_id}, outside the vocabulary "
                                   f"[0, {vocab_size})")
