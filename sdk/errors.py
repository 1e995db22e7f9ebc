"""Exceptions of the typed SDK (`formwork.Client`, `formwork.AsyncClient`, `formwork.LLM`).

Everything derives from `FormworkError`. HTTP failures follow the `openai` client's names:
`APIError` (with `status_code`, `type`, `param`, `code`) and one subclass per status family.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class FormworkError(Exception):
    """Base class of the SDK's errors."""


class UnsupportedOutputTypeError(FormworkError, TypeError):
    """The output type has no JSON Schema, or its schema uses something constrained decoding cannot
    enforce. Raised before any generation; `field` names the field at fault (`""` for the root),
    `keyword` the JSON Schema keyword when there is one."""

    def __init__(self, message: str, *, field: str | None = None, keyword: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.keyword = keyword


class TruncatedOutputError(FormworkError):
    """Generation stopped at `max_tokens` (finish reason `length`) before the output was complete;
    `partial_text` is what was generated."""

    def __init__(self, partial_text: str, *, max_tokens: int | None = None) -> None:
        limit = f" of max_tokens={max_tokens}" if max_tokens is not None else ""
        shown = partial_text if len(partial_text) <= 200 else partial_text[:197] + "..."
        super().__init__(f"the output was cut off by the token limit{limit} before it was complete; "
                         f"raise max_tokens (partial text: {shown!r})")
        self.partial_text = partial_text
        self.finish_reason = "length"
        self.max_tokens = max_tokens


class OutputValidationError(FormworkError, ValueError):
    """The generated text is not a valid value of the output type to pydantic (e.g. from a server that
    ignores `response_format`); `text` is the raw output, `path` the field that did not fit
    (`items[0].sku`, from pydantic's error location)."""

    def __init__(self, message: str, *, text: str, path: str = "") -> None:
        super().__init__(message)
        self.text = text
        self.path = path


class GenerationError(FormworkError):
    """The engine failed or aborted the request (e.g. its grammar could not be compiled, or the prompt
    does not fit the context)."""


class APIError(FormworkError):
    """The server answered with an error. `status_code` is None for errors without an HTTP status
    (connection failures, an error event in the middle of a stream)."""

    def __init__(self, message: str, *, status_code: int | None = None, type: str | None = None,
                 param: str | None = None, code: str | None = None, body: Any = None) -> None:
        super().__init__(message if status_code is None else f"HTTP {status_code}: {message}")
        self.message = message
        self.status_code = status_code
        self.type = type
        self.param = param
        self.code = code
        self.body = body


class APIConnectionError(APIError):
    """The server could not be reached, or the connection broke."""


class APITimeoutError(APIConnectionError):
    """The request timed out."""


class BadRequestError(APIError):
    """HTTP 400 (and 413, 422): the request was invalid, e.g. a schema the server cannot enforce."""


class AuthenticationError(APIError):
    """HTTP 401: missing or wrong API key."""


class PermissionDeniedError(APIError):
    """HTTP 403."""


class NotFoundError(APIError):
    """HTTP 404: unknown route or model."""


class RateLimitError(APIError):
    """HTTP 429."""


class InternalServerError(APIError):
    """HTTP 5xx (and error events of the server type in a stream)."""


class ServiceUnavailableError(InternalServerError):
    """HTTP 503: the server is overloaded or its engine is down; `retry_after` in seconds if given."""

    def __init__(self, message: str, *, retry_after: float | None = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.retry_after = retry_after


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    413: BadRequestError, 422: BadRequestError, 429: RateLimitError, 503: ServiceUnavailableError,
}


def error_from_response(status_code: int | None, body: Any, headers: Mapping[str, str] | None = None) -> APIError:
    """The typed error for an error response (`{"error": {message, type, param, code}}` or anything
    else) or, with `status_code=None`, for an error event inside a stream."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or "no message")
        details = {"type": error.get("type"), "param": error.get("param"), "code": error.get("code")}
    else:
        message = str(body)[:500] if body not in (None, "") else "no error body"
        details = {"type": None, "param": None, "code": None}
    if status_code is None:
        cls: type[APIError] = BadRequestError if details["type"] == "invalid_request_error" else InternalServerError
    else:
        cls = _BY_STATUS.get(status_code, InternalServerError if status_code >= 500 else APIError)
    if cls is ServiceUnavailableError:
        return ServiceUnavailableError(message, retry_after=_retry_after(headers), status_code=status_code,
                                       body=body, **details)
    return cls(message, status_code=status_code, body=body, **details)


def _retry_after(headers: Mapping[str, str] | None) -> float | None:
    try:
        return float((headers or {}).get("retry-after", ""))
    except ValueError:
        return None
