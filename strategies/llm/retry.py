"""Bounded retries shared by the HTTP LLM backends (Anthropic, OpenAI-compatible).

What is retried: connection failures (refused, reset, closed mid-body), timeouts, malformed bodies
(a proxy's HTML error page, a truncated reply) and the statuses a server uses for "try again" — 408,
409, 429, 5xx and Anthropic's 529 (overloaded). Everything else (400, 401, 403, 404, 422, …) fails
at once. Between attempts the backend waits the server's ``Retry-After`` (or ``retry-after-ms``)
when it sends one — never longer than ``max_retry_wait`` — and an exponential backoff otherwise.
After ``max_retries`` retries the last failure becomes one :class:`LLMError` line.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypedDict, TypeVar

from .base import LLM, LLMError

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 409, 429})


def one_line(text: str) -> str:
    """An error text on one line, at most 300 characters (the backends' failure messages)."""
    return " ".join(text.split())[:300]


def token_count(v) -> int:
    """A token count as a server reported it; 0 for a missing or malformed one."""
    try:
        return max(0, int(v or 0))
    except (TypeError, ValueError):
        return 0


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (delta-seconds or an HTTP date);
    None if absent."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)  # a bad date: ValueError, never None
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries after the first attempt; ``backoff`` doubles per retry up to
    ``max_backoff``; a server's Retry-After is honoured up to ``max_retry_wait`` seconds."""

    max_retries: int = 2
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_retry_wait: float = 30.0

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to sleep before retry number ``retry`` (0-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_wait)
        return min(self.max_backoff, self.backoff * (2**retry))


class RetryOptions(TypedDict, total=False):
    """:class:`HttpLLM`'s keyword arguments, passed on by the concrete clients."""

    timeout: float
    max_retries: int
    retry_backoff: float
    max_retry_wait: float


class HttpLLM(LLM):
    """An LLM behind an HTTP API: ``timeout`` seconds per request; ``max_retries`` retries after the
    first attempt, waiting ``Retry-After`` (at most ``max_retry_wait`` s) or an exponential backoff
    from ``retry_backoff`` s."""

    def __init__(
        self,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        max_retry_wait: float = 30.0,
    ) -> None:
        super().__init__()
        self.timeout = float(timeout)
        self.retry = RetryPolicy(
            max_retries=max(0, int(max_retries)),
            backoff=float(retry_backoff),
            max_retry_wait=float(max_retry_wait),
        )


class Retryable(Exception):
    """Raised inside an attempt: the failure ``message`` may go away if the request is sent
    again."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def status_failure(status: int, text: str, headers: Mapping[str, str] | None) -> Exception:
    """What an HTTP failure ``status`` raises: :class:`Retryable` (with the server's Retry-After)
    when the status means "try again", else :class:`LLMError`."""
    if status in RETRYABLE_STATUS or status >= 500:
        return Retryable(text, parse_retry_after(headers))
    return LLMError(text)


async def with_retries(policy: RetryPolicy, attempt: Callable[[], Awaitable[T]]) -> T:
    """``await attempt()`` until it returns, retrying on :class:`Retryable` as ``policy`` allows;
    any other exception (an :class:`LLMError` for a permanent failure) propagates at once."""
    tries = policy.max_retries + 1
    for retry in range(tries):
        try:
            return await attempt()
        except Retryable as e:
            if retry + 1 >= tries:
                suffix = f" (gave up after {tries} attempts)" if tries > 1 else ""
                raise LLMError(f"{e.message}{suffix}") from e
            await asyncio.sleep(policy.delay(retry, e.retry_after))
    raise AssertionError("unreachable")  # pragma: no cover
