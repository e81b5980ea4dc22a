"""The two ASGI chores the HTTP middlewares share: reading a header, and answering with a whole
body."""

from __future__ import annotations

from starlette.types import Message, Scope, Send


def header(scope: Scope | Message, name: bytes) -> str | None:
    """The value of header ``name`` in a request's scope or a response's start message."""
    return next(
        (v.decode("latin-1") for k, v in scope.get("headers", ()) if k.lower() == name), None
    )


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: bytes = b"application/json",
    *headers: tuple[bytes, bytes],
) -> None:
    """A complete response: ``status``, ``body`` and its type and length, then ``headers``."""
    start = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})
