"""OpenAI error objects: typed exceptions that render as `{"error": {message, type, param, code}}`."""

from __future__ import annotations

import json

from starlette.responses import JSONResponse


class APIError(Exception):
    """An error answered to the client with `status` and an OpenAI error object.

    `type` is OpenAI's error family (`invalid_request_error`, `authentication_error`, ...), `param` the
    request field at fault (dotted path, or None) and `code` a stable machine-readable string."""

    status: int = 500
    type: str = "server_error"
    default_code: str | None = None

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code if code is not None else self.default_code
        self.headers = headers or {}

    def to_dict(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def to_response(self) -> JSONResponse:
        return JSONResponse(self.to_dict(), status_code=self.status, headers=self.headers)

    def to_sse(self) -> str:
        """The error as one server-sent event, for failures after a stream has started."""
        return f"data: {json.dumps(self.to_dict())}\n\n"


class InvalidRequestError(APIError):
    """The request is malformed or asks for something invalid (HTTP 400)."""

    status = 400
    type = "invalid_request_error"
    default_code = "invalid_value"


class InvalidJSONBodyError(InvalidRequestError):
    """The body is not a JSON object."""

    default_code = "invalid_json"


class InvalidTypeError(InvalidRequestError):
    """A field has the wrong JSON type."""

    default_code = "invalid_type"


class MissingFieldError(InvalidRequestError):
    """A required field is absent."""

    default_code = "missing_required_parameter"


class UnsupportedFieldError(InvalidRequestError):
    """The field is valid OpenAI but formwork does not implement it."""

    default_code = "unsupported_parameter"


class ContextLengthError(InvalidRequestError):
    """Prompt plus requested completion exceed the model's context."""

    default_code = "context_length_exceeded"


class InvalidConstraintError(InvalidRequestError):
    """A schema, regex, choice list or grammar cannot be compiled or enforced."""

    default_code = "invalid_schema"


class AuthenticationError(APIError):
    """Missing or wrong bearer token (HTTP 401)."""

    status = 401
    type = "authentication_error"
    default_code = "invalid_api_key"


class ModelNotFoundError(APIError):
    """The requested model is not served here (HTTP 404)."""

    status = 404
    type = "invalid_request_error"
    default_code = "model_not_found"


class RouteNotFoundError(APIError):
    """No such endpoint (HTTP 404)."""

    status = 404
    type = "invalid_request_error"
    default_code = "not_found"


class MethodNotAllowedError(APIError):
    """The endpoint exists but not for this HTTP method (HTTP 405)."""

    status = 405
    type = "invalid_request_error"
    default_code = "method_not_allowed"


class PayloadTooLargeError(APIError):
    """The request body exceeds the size limit (HTTP 413)."""

    status = 413
    type = "invalid_request_error"
    default_code = "request_too_large"


class ServerOverloadedError(APIError):
    """The waiting queue is full (HTTP 503 with Retry-After)."""

    status = 503
    type = "server_error"
    default_code = "server_overloaded"

    def __init__(self, message: str, retry_after: int = 1):
        super().__init__(message, headers={"Retry-After": str(retry_after)})


class EngineUnavailableError(APIError):
    """The engine has died; nothing can be served (HTTP 503)."""

    status = 503
    type = "server_error"
    default_code = "engine_dead"


class InternalError(APIError):
    """A request failed inside the engine (HTTP 500)."""

    status = 500
    type = "server_error"
    default_code = "internal_error"
