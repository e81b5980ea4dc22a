"""Errors every adapter raises, so callers (the MCP server, the driver) can map them without knowing
the backend.

Modelled on httpx's hierarchy: one base class, specific subclasses that say *what* went wrong.
"""

from __future__ import annotations


class KGError(Exception):
    """Base class for every error an adapter raises on purpose."""


class InvalidInput(KGError, ValueError):
    """The caller passed something malformed: a bad ID, an empty query, too many IDs."""


class UnknownKG(InvalidInput):
    """An ID names a KG that is not configured."""


class NotFound(KGError, LookupError):
    """A well-formed ID or relation that the KG does not contain."""


class BackendError(KGError):
    """The backend failed (endpoint down, timed out, returned garbage). Usually transient."""


class EndpointFailed(BackendError):
    """The endpoint failed (an HTTP 5xx) and said why. Engines answer 500 both for their own trouble
    and for a query they cannot run (an unsupported function, an internal limit), so callers are
    shown the message and left to tell which."""


class BackendRefused(BackendError):
    """The backend answered and refused this very request (an HTTP 4xx, a redirect, an answer over
    the size cap): asking again the same way gets the same answer, so callers are told to change the
    request, not to retry."""


class BackendTimeout(BackendError):
    """The backend did not answer within the configured timeout."""


class RateLimited(BackendError):
    """The backend answered 429 and kept doing so after the allowed retries."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CircuitOpen(BackendError):
    """Calls to a backend are suspended after repeated failures; retry later."""


class ServiceUnavailable(KGError):
    """A shared service (the embedder, an LLM) is not installed or not configured; the message says
    how to fix it."""


class Busy(BackendError):
    """The server's workers for this kind of work are all taken and too many calls wait for them;
    retry soon."""
