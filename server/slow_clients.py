"""Slow HTTP clients cannot hold connections open. uvicorn closes a connection idle *between*
requests after ``timeout_keep_alive`` (5 s), but not one that sends a request's headers or body a
byte at a time.

* :func:`protocol_class`: uvicorn's own HTTP protocol (httptools when installed, else h11) with a
  deadline for a request's headers: a connection that has not completed a request's headers
  ``[server] header_timeout`` seconds after it opened, or after its previous response, is closed.
* :class:`BodyDeadline`: ASGI middleware giving a request ``[server] body_timeout`` seconds to
  deliver its whole body; past it the app sees the client disconnect. Only the body is timed: a
  response stream (SSE) that waits for the client to go away waits as long as it likes.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("tot_mcp.http")


class _HeaderDeadline:
    """Mixed into a uvicorn HTTP protocol: arms a timer when the connection opens and after each
    response; if no new request has started when it fires, the connection is closed."""

    header_seconds: float  # set by protocol_class
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        before = getattr(self, "cycle", None)
        self._deadline = self.loop.call_later(self.header_seconds, self._expire, before)  # type: ignore[attr-defined]

    def _expire(self, before: Any) -> None:
        cycle = getattr(self, "cycle", None)
        waiting = cycle is None or (cycle is before and getattr(cycle, "response_complete", False))
        transport = getattr(self, "transport", None)
        if waiting and transport is not None and not transport.is_closing():
            log.info(
                "closing a connection that sent no complete request headers within %.0f s",
                self.header_seconds,
            )
            transport.close()


def protocol_class(header_seconds: float) -> type:
    """The HTTP protocol uvicorn would pick (``http="auto"``), with the header deadline."""
    base: type
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:  # no httptools: uvicorn's pure-Python h11 protocol
        from uvicorn.protocols.http.h11_impl import H11Protocol as base
    return type(
        f"Deadline{base.__name__}", (_HeaderDeadline, base), {"header_seconds": header_seconds}
    )


class BodyDeadline:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + self.seconds
        complete = False

        async def timed() -> Message:
            nonlocal complete
            if (
                complete
            ):  # the body is in: whatever waits now (a stream for the disconnect) is not timed
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(0.0, until - loop.time()))
            except asyncio.TimeoutError:
                log.info(
                    "request body not complete within %.0f s: treating the client as gone",
                    self.seconds,
                )
                complete = True
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body"):
                complete = True
            return message

        await self.app(scope, timed, send)
