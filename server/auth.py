"""Optional bearer-token authentication for the `/v1` routes (`--api-key`)."""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from formwork.server.errors import AuthenticationError

PROTECTED_PREFIX = "/v1"


class BearerAuthMiddleware:
    """Rejects `/v1/*` requests whose `Authorization` header is not `Bearer <api_key>` (401).
    `/health` and `/metrics` stay open, as in vLLM."""

    def __init__(self, app: ASGIApp, api_key: str):
        self.app = app
        self.expected = f"Bearer {api_key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PROTECTED_PREFIX):
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                message = "missing bearer token" if not given else "incorrect API key provided"
                response = AuthenticationError(message).to_response()
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
