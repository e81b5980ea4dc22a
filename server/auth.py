"""Bearer-token protection for the streamable HTTP transport, as a tiny ASGI middleware.

The SDK's own auth hooks implement OAuth 2.1 resource-server semantics (token verifier +
protected-resource metadata), which is more than a single shared secret needs; wrapping the ASGI app
keeps the check in one obvious place and applies it to every HTTP request, including the GET stream
and DELETE.
"""

from __future__ import annotations

import hmac
import json

from starlette.types import ASGIApp, Receive, Scope, Send

from .asgi import respond


class BearerTokenMiddleware:
    """Reject HTTP requests without ``Authorization: Bearer <token>`` with 401; pass lifespan events
    through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("empty token")
        self.app = app
        self._expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "unauthorized", "error_description": "missing or wrong bearer token"}
        ).encode()
        await respond(
            send, 401, body, b"application/json", (b"www-authenticate", b'Bearer realm="tot-mcp"')
        )

    def _authorized(self, scope: Scope) -> bool:
        """The auth scheme is case-insensitive (RFC 9110 §11.1: ``bearer``, ``BEARER``); the token
        is compared in constant time."""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                scheme, _, token = value.strip().partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    token.strip(), self._expected
                )
        return False
