"""Polite, fault-tolerant HTTP to one SPARQL endpoint (or the Wikidata API): shared per-endpoint
limiter, 429 ``Retry-After`` handling, bounded retries with backoff, a total-time timeout and a
small circuit breaker.

httpx rather than SPARQLWrapper: SPARQLWrapper is blocking urllib, so every in-flight query would
hold a thread that cannot be cancelled when our timeout fires (the endpoint slot would stay busy),
it opens a new connection per query, and it folds most HTTP errors into its own exceptions without
the response headers we need (``Retry-After``).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import math
import re
import time
import weakref
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from typing import Any
from urllib.parse import urlencode

import httpx

from ..clients import FairSlots
from ..errors import (
    BackendError,
    BackendRefused,
    BackendTimeout,
    CircuitOpen,
    EndpointFailed,
    RateLimited,
)

log = logging.getLogger("tot_mcp.sparql")
GET_LIMIT = 1800  # a query longer than this, URL-encoded, is POSTed


def user_agent(contact: str) -> str:
    """Wikimedia's User-Agent policy: ``client/version (contact) library/version``."""
    try:
        version = metadata.version("tot-mcp")
    except metadata.PackageNotFoundError:
        version = "0.1"
    return f"tot-mcp/{version} ({contact}) python-httpx/{httpx.__version__}"


@dataclass(frozen=True)
class Policy:
    """How hard to try one endpoint. Times in seconds."""

    timeout: float = 30.0  # total per request; below WDQS's 60 s server-side cap
    # the most one call may take, all attempts, back-off and queueing for a slot included (None:
    # ``timeout``). A stalled endpoint then costs a caller one timeout, not (retries + 1) ×
    # timeout.
    deadline: float | None = None
    retries: int = 2  # extra attempts after 5xx, timeouts, connection errors, broken JSON, 429
    backoff: float = 0.5  # first retry delay, doubled each time
    max_retry_after: float = 20.0  # a longer Retry-After is not slept through: RateLimited at once
    max_concurrent: int = 1
    breaker_failures: int = 5  # consecutive failed calls that open the circuit (0 disables it)
    breaker_cooldown: float = 30.0  # how long it stays open before one probe is let through
    # a query parameter through which the endpoint accepts a time limit ("timeout" on Virtuoso in
    # ms, on Fuseki in s; "maxQueryTimeMillis" on Blazegraph): each request sends the time we will
    # wait for it, so the engine can stop when we stop listening. None: nothing is sent (an endpoint
    # may reject unknown parameters).
    timeout_param: str | None = None
    timeout_unit: str = "s"  # "s" (whole seconds, rounded up) or "ms"
    # a long query is POSTed as the body (application/sparql-query, SPARQL 1.1 Protocol 2.1.3), not
    # as a form: the form's percent-encoding cost 0.5 ms for a reasoner's 7 KB VALUES query. An
    # endpoint that refuses it (400 or
    # 415) where the form works is asked by form from then on.
    direct_post: bool = True


class EndpointGuard:
    """Shared state of one endpoint URL: concurrency slots, the "not before" time set by a 429, the
    breaker.

    Slots are :class:`~kg_adapters.clients.FairSlots`, one set per event loop (they cannot cross
    loops) and per lane: callers' own queries (``sparql_query``, lane ``"caller"``) wait for their
    own slots, so a few slow ones cannot hold every slot the traversal tools need, and one of them
    timing out says the query was heavy, not that the endpoint is down, so it does not count toward
    the breaker. Within a lane, a freed slot goes to the waiting client served longest ago, so one
    client's flood of calls delays another client's call by at most one of them per slot. The rest
    is plain data.
    """

    def __init__(self, url: str, policy: Policy, clock=time.monotonic) -> None:
        self.url = url
        self.policy = policy
        self._clock = clock
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, FairSlots]] = (
            weakref.WeakKeyDictionary()
        )
        self.not_before = 0.0
        self.failures = 0
        self.opened_at: float | None = None
        self._probing = False

    # -- concurrency and 429 back-off --------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def slot(self, lane: str = "tools"):
        lanes = self._slots.setdefault(asyncio.get_running_loop(), {})
        slots = lanes.get(lane)
        if slots is None:
            slots = lanes[lane] = FairSlots(self.policy.max_concurrent)
        async with (
            slots.slot()
        ):  # shared fairly among the clients waiting (kg_adapters.clients.CLIENT)
            delay = self.not_before - self._clock()
            if delay > 0:
                await asyncio.sleep(delay)
            yield

    def defer(self, seconds: float) -> None:
        self.not_before = max(self.not_before, self._clock() + seconds)

    # -- circuit breaker ---------------------------------------------------------------------------
    def enter(self) -> bool:
        """Raise CircuitOpen while the circuit is open; return True if this call is the half-open
        probe."""
        if self.opened_at is None:
            return False
        waited = self._clock() - self.opened_at
        if waited < self.policy.breaker_cooldown or self._probing:
            left = max(0.0, self.policy.breaker_cooldown - waited)
            raise CircuitOpen(
                f"{self.url}: {self.failures} consecutive failures; calls suspended"
                + (f" for {left:.1f} s more" if left else " while a probe request is in flight")
            )
        self._probing = True
        return True

    def refuse_if_open(self) -> None:
        """Re-check after waiting for a slot: calls queued before the circuit opened must not still
        go out."""
        if self.opened_at is not None:
            raise CircuitOpen(f"{self.url}: {self.failures} consecutive failures; calls suspended")

    def leave(self, probe: bool, ok: bool | None) -> None:
        """``ok`` None means the outcome says nothing about the endpoint's health (e.g. cancelled,
        429)."""
        if probe:
            self._probing = False
        if ok is None:
            return
        if ok:
            self.failures, self.opened_at = 0, None
            return
        self.failures += 1
        if self.policy.breaker_failures and (
            probe or self.failures >= self.policy.breaker_failures
        ):
            self.opened_at = self._clock()


class EndpointRegistry:
    """One guard per endpoint URL, so every KG (and every concurrent call) using a URL shares its
    limits."""

    def __init__(self) -> None:
        self._guards: dict[str, EndpointGuard] = {}

    def guard(self, url: str, policy: Policy) -> EndpointGuard:
        g = self._guards.get(url)
        if g is None:
            g = self._guards[url] = EndpointGuard(url, policy)
        return g


# A remote service's limits apply to this whole process (it sees one client), so the default
# registry is process-wide on purpose. Tests and embedders pass their own.
SHARED_ENDPOINTS = EndpointRegistry()


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` is either delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)  # RFC 9110 says integer seconds; accept a fraction too
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


class _Retry(Exception):
    """A failed attempt worth repeating. ``kind``: timeout | rate | error; ``wait``: the server's
    Retry-After; ``said``: what the endpoint said of its failure (the first line of a plain-text
    error body), if anything."""

    def __init__(
        self, what: str, kind: str = "error", wait: float | None = None, said: str | None = None
    ) -> None:
        super().__init__(what)
        self.what, self.kind, self.wait, self.said = what, kind, wait, said


class JsonEndpoint:
    """GET/POST that returns parsed JSON, with the guard's limits, retries and breaker around every
    call."""

    def __init__(
        self,
        guard: EndpointGuard,
        headers: dict[str, str],
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.guard = guard
        self.policy = guard.policy
        self.attempts = 0  # total HTTP attempts made, for tests and diagnostics
        self._headers = headers
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._direct = (
            guard.policy.direct_post
        )  # off for good once the endpoint refuses a direct POST

    @property
    def client(self) -> httpx.AsyncClient:
        """One pooled client per event loop (an httpx client cannot outlive the loop it first ran
        on)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # redirects are not followed: a 3xx could send the server's queries (and headers) to any
            # host
            self._client = httpx.AsyncClient(
                headers=self._headers, transport=self._transport, follow_redirects=False
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        if self._client is not None and self._loop is asyncio.get_running_loop():
            await self._client.aclose()
        self._client = self._loop = None

    async def request(
        self,
        method: str,
        params: dict[str, str],
        *,
        form: bool = False,
        timeout: float | None = None,
        retry_timeouts: bool = True,
        raw: Raw | None = None,
        lane: str = "tools",
    ) -> dict:
        """Parsed JSON of one request, with the guard's limits, retries and breaker. ``timeout``
        lowers the policy's per-attempt timeout; ``retry_timeouts=False`` gives up after the first
        timeout (a caller's own query would time out again). With ``raw`` the body is not parsed as
        JSON: it is returned as ``{"content_type": …, "body": bytes}``, sent with ``raw.accept`` and
        cut off (BackendError) beyond ``raw.max_bytes``. ``lane="caller"``: a caller's own query
        (its own slots; its timeout leaves the breaker as it was)."""
        url, policy = self.guard.url, self.policy
        budget = policy.deadline or policy.timeout
        if timeout:
            budget = min(budget, timeout)
        end = time.monotonic() + budget
        probe = self.guard.enter()
        ok: bool | None = None
        last = _Retry("no attempt made")
        tries = 0
        out_of_time = False  # stopped for want of time, not of attempts
        try:
            for attempt in range(policy.retries + 1):
                left = end - time.monotonic()
                if left <= 0.001:
                    out_of_time = True
                    break
                sent = False

                async def attempt_once() -> dict:
                    nonlocal tries, sent
                    async with self.guard.slot(lane):
                        if not probe:
                            self.guard.refuse_if_open()
                        self.attempts += 1
                        tries, sent = tries + 1, True
                        rest = end - time.monotonic()
                        limit = min(rest, timeout or rest)
                        return await self._once(
                            method, params, form, limit, raw, caller=lane == "caller"
                        )

                try:
                    # wait_for, not asyncio.timeout: gather_eager may start this coroutine in one
                    # task and finish it in another, and asyncio.timeout would cancel the first
                    result = await asyncio.wait_for(attempt_once(), left)
                    ok = True
                    return result
                # the deadline passed: queued for a slot, waiting out a 429, or sending
                except TimeoutError:
                    what = (
                        f"no answer within {budget:.3g} s"
                        if sent
                        else (
                            f"no free slot at the endpoint within {budget:.3g} s "
                            "(other calls hold them)"
                        )
                    )
                    last = _Retry(what, kind="timeout" if sent else "queued")
                    out_of_time = True
                    break
                except _Retry as r:
                    last = r
                    if (
                        attempt == policy.retries
                        or (r.kind == "timeout" and not retry_timeouts)
                        or (lane == "caller" and r.said)
                    ):  # the engine said why it failed this very query
                        break
                    if r.kind != "rate" or r.wait is None:
                        pause = policy.backoff * (2**attempt)
                        if time.monotonic() + pause >= end:
                            out_of_time = True
                            break
                        await asyncio.sleep(pause)
                except (RateLimited, CircuitOpen):
                    raise
                except BackendError:
                    ok = True  # the endpoint answered; it refused this request
                    raise
            if last.kind == "rate":
                raise RateLimited(
                    f"{url}: still rate limited ({last.what}) after {tries} attempts", last.wait
                )
            # the endpoint is busy with other calls: says nothing of its health
            if last.kind == "queued":
                raise BackendTimeout(f"{url}: {last.what}")
            # a caller's own query timing out, or failing with the engine's reason, says nothing of
            # the endpoint
            ok = None if lane == "caller" and (last.kind == "timeout" or last.said) else False
            if last.said:
                how = f"after {tries} attempts" if tries > 1 else "not retried"
                raise EndpointFailed(f"{url}: {last.what}: {last.said} ({how})")
            cls = BackendTimeout if last.kind == "timeout" else BackendError
            why = ""
            if out_of_time and tries <= policy.retries:
                why = f"; the call's deadline of {budget:.3g} s passed"
            plural = "s" if tries != 1 else ""
            raise cls(f"{url}: {last.what} (gave up after {tries} attempt{plural}{why})")
        finally:
            self.guard.leave(probe, ok)

    async def query(self, query: str, **options: Any) -> dict:
        """:meth:`request` of one SPARQL query: a GET, or a POST when the encoded query is over
        ``GET_LIMIT``. Percent-encoding at most triples a byte: only a query in between is measured
        encoded (a reasoner's VALUES queries run to kilobytes, and encoding one to measure it cost
        as much as sending it)."""
        params = {"query": query}
        size = len(query.encode())
        form = size > GET_LIMIT or (3 * size + 6 > GET_LIMIT and len(urlencode(params)) > GET_LIMIT)
        return await self.request("POST" if form else "GET", params, form=form, **options)

    async def _once(
        self,
        method: str,
        params: dict[str, str],
        form: bool,
        timeout: float | None = None,
        raw: Raw | None = None,
        caller: bool = False,
    ) -> dict:
        """One attempt. An endpoint's error text goes to the log; the client is told the HTTP
        status, and of a caller's own query (``caller``) also what the engine's first line says went
        wrong, rebuilt from its own query (:func:`_engine_message`): the caller needs it to fix the
        query, and it says nothing about the server."""
        url, policy = self.guard.url, self.policy
        limit = min(policy.timeout, timeout) if timeout else policy.timeout
        try:
            accept = self._headers.get("Accept", "application/json")
            bound = raw or Raw(accept, MAX_JSON_BYTES, MAX_JSON_ITEMS)
            direct = form and self._direct and "query" in params
            resp = await asyncio.wait_for(
                self._bounded(method, params, form, limit, bound, direct), limit
            )
            if direct and resp.status_code in (
                400,
                415,
            ):  # the query, or the way it was sent? ask by form
                again = await asyncio.wait_for(
                    self._bounded(method, params, form, limit, bound, False), limit
                )
                if again.status_code < 400:
                    log.info(
                        "%s refuses a query POSTed as its body (HTTP %s); sending forms",
                        url,
                        resp.status_code,
                    )
                    self._direct = False
                resp = again
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise _Retry(f"no answer within {limit:.3g} s", kind="timeout") from None
        except httpx.TransportError as e:
            raise _Retry(f"connection failed ({type(e).__name__}: {e})") from None
        status = resp.status_code
        if status == 429:
            wait = retry_after_seconds(resp.headers.get("Retry-After"))
            if wait is not None and wait > policy.max_retry_after:
                raise RateLimited(
                    f"{url}: rate limited (HTTP 429), asked to retry after {wait:.0f} s",
                    retry_after=wait,
                )
            if wait is not None:  # before the slot is freed: the call it goes to must wait too
                self.guard.defer(wait)  # every caller of this endpoint waits, not just this one
            later = f", retry after {wait:.3g} s" if wait is not None else ""
            raise _Retry(f"HTTP 429 (rate limited{later})", kind="rate", wait=wait)
        if status >= 500:
            page = resp.text[:300]
            if "TimeoutException" in page or "QueryTimeout" in page:
                raise BackendTimeout(
                    f"{url}: the query exceeded the endpoint's own time limit (HTTP {status})"
                )
            log.info("%s: HTTP %s %s", url, status, _snippet(page))
            said = _engine_message(page, resp.headers, params.get("query", "")) if caller else None
            raise _Retry(f"HTTP {status} (the endpoint failed)", said=said)
        if (
            300 <= status < 400
        ):  # where it points stays in the log: a Location may carry a server's secrets
            log.info("%s: HTTP %s to %s", url, status, resp.headers.get("location", "?")[:500])
            raise BackendRefused(
                f"{url}: the endpoint redirects (HTTP {status}; the server log says where); "
                "configure that URL if you trust it (redirects are not followed)"
            )
        if status >= 400:
            log.info("%s: HTTP %s %s", url, status, _snippet(resp.text))
            said = (
                _engine_message(resp.text[:2000], resp.headers, params.get("query", ""))
                if caller
                else None
            )
            raise BackendRefused(
                f"{url}: HTTP {status} (the endpoint refused the request)"
                + (f": {said}" if said else "")
            )
        if resp.content[-200:].rstrip().endswith(_ENGINE_CANCELLED):  # oxigraph --timeout-s
            raise BackendTimeout(f"{url}: the query exceeded the endpoint's own time limit")
        if raw is not None:
            return {"content_type": resp.headers.get("content-type", ""), "body": resp.content}
        body = resp.content  # its JSON items were counted as it was read (_bounded)
        try:
            if len(body) > THREAD_PARSE_BYTES:
                data = await asyncio.to_thread(_loads, body)
            else:
                data = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            raise _Retry(f"malformed or truncated JSON ({len(resp.content)} bytes)") from None
        except (
            RecursionError
        ):  # JSON nested beyond the parser's stack: this endpoint's fault, not every KG's
            raise BackendRefused(f"{url}: the answer's JSON is nested too deeply to read") from None
        if not isinstance(data, dict):
            raise _Retry("JSON answer is not an object")
        return data

    async def _bounded(
        self,
        method: str,
        params: dict[str, str],
        form: bool,
        timeout: float,
        raw: Raw,
        direct: bool = False,
    ) -> httpx.Response:
        """The response with its body read up to ``raw.max_bytes`` (BackendError beyond: never
        buffer an answer of unbounded size). ``direct``: the query is the POST's body, any other
        parameter in the URL."""
        if self.policy.timeout_param:
            hint = (
                math.ceil(timeout * 1000)
                if self.policy.timeout_unit == "ms"
                else math.ceil(timeout)
            )
            params = {**params, self.policy.timeout_param: str(hint)}
        headers = {"Accept": raw.accept}
        kwargs: dict[str, Any]
        if direct:
            rest = {k: v for k, v in params.items() if k != "query"}
            kwargs = {"content": params["query"].encode(), **({"params": rest} if rest else {})}
            headers["Content-Type"] = "application/sparql-query; charset=utf-8"
        else:
            kwargs = {"data": params} if form else {"params": params}
        async with self.client.stream(
            method, self.guard.url, headers=headers, timeout=timeout, **kwargs
        ) as resp:
            chunks: list[bytes] = []
            size = items = 0
            # 4 once a character past U+FFFF shows: Python then holds every character in 4 bytes
            wide = 1
            async for chunk in resp.aiter_bytes():
                if wide == 1 and _astral(chunk):
                    wide, size = 4, size * 4
                size += len(chunk) * wide
                if size > raw.max_bytes:
                    raise BackendRefused(
                        f"{self.guard.url}: the answer is larger than {raw.max_bytes:,} bytes; "
                        "select fewer or shorter values"
                    )
                if raw.max_items is not None and resp.status_code < 300:
                    # bytes counted one by one: chunk borders change nothing
                    items += json_items(chunk)
                    if items > raw.max_items:
                        raise BackendRefused(
                            f"{self.guard.url}: the answer holds more than {raw.max_items:,} "
                            "JSON items (rows, values); select fewer rows"
                        )
                chunks.append(chunk)
            return httpx.Response(
                resp.status_code,
                headers=resp.headers,
                content=b"".join(chunks),
                request=resp.request,
            )


@dataclass(frozen=True)
class Raw:
    """What to accept and the most of an answer to read (a body fetched as bytes, or JSON to be
    parsed)."""

    accept: str
    max_bytes: int
    max_items: int | None = None  # JSON items (json_items) read at most; None: not counted


#: the most of a JSON answer read into memory (a traversal query's answer is a few hundred rows, a
#: hop's bulk read of 20,000 labelled edges about 6 MB; sparql_query caps its own, smaller); beyond
#: it the request fails instead of holding hundreds of MB: a string of astral characters parses to 4
#: bytes a character
MAX_JSON_BYTES = 16 << 20
#: a character past U+FFFF, as UTF-8 (its lead byte) or as a JSON escape (a high surrogate,
#: ``\ud83d``): an answer holding one is counted at 4 bytes a byte
_ASTRAL = re.compile(rb"[\xf0-\xf4]|\\u[dD][89abAB]")


def _astral(chunk: bytes) -> bool:
    """Whether ``chunk`` holds a character past U+FFFF (:data:`_ASTRAL`). The regular expression
    walks a byte at a time (1.1 ms a 64 KB chunk); most answers are ASCII without a ``\\u``
    escape, which two byte scans tell in 0.01 ms."""
    if chunk.isascii() and b"\\u" not in chunk:
        return False
    return _ASTRAL.search(chunk) is not None


#: the most JSON items (see :func:`json_items`) of one answer parsed: small bindings cost about 600
#: bytes an item once parsed (docs/security.md), so this bounds one answer to ~150 MB; a traversal
#: query's answer holds a few thousand items, the default backward scan (20,000 rows of two columns)
#: about 160,000
MAX_JSON_ITEMS = 250_000
#: an answer larger than this is parsed in a worker thread (below it, the hop costs more than the
#: parse)
THREAD_PARSE_BYTES = 1 << 20

#: what ``oxigraph serve --timeout-s`` writes after the part of the answer it had sent when the time
#: ran out
_ENGINE_CANCELLED = b"The SPARQL operation has been cancelled"


def json_items(body: bytes) -> int:
    """Containers plus commas: at least half the Python objects ``json.loads(body)`` would build,
    object keys aside (one parse interns them), since every entry after a container's first follows
    a comma. Counted on the raw bytes, commas inside strings too, so it may count over, never under;
    in C, ~30 ms for 25 MB, without building anything."""
    return body.count(b",") + body.count(b"{") + body.count(b"[")


def _loads(body: bytes) -> Any:
    """``json.loads`` in a worker thread. The C parser holds the GIL for the whole document; a
    Python hook per object gives the interpreter a point to hand it to the event loop (measured: the
    loop's longest stall during a 12 MB parse fell from 0.20 s to 0.04 s)."""
    return json.loads(body, object_hook=_as_is)


def _as_is(obj: dict) -> dict:
    return obj


#: what an engine's first line says went wrong with a query, as the caller is told it (never the
#: line itself: a line may carry a server's insides, and no list of secret shapes is complete)
_ENGINE_KINDS = (
    (
        re.compile(r"(?i)\b(pars(e|er|ing)|syntax|lexical|unexpected|expected|encountered)\b"),
        "the engine could not parse the query",
    ),
    (
        re.compile(r"(?i)\b(not supported|unsupported|not allowed|not implemented)\b"),
        "the engine does not support part of the query",
    ),
    (
        re.compile(r"(?i)\b(unknown|undefined|unbound|invalid)\b"),
        "the engine found something in the query it does not know",
    ),
)
_ENGINE_WHERE = re.compile(
    r"(?i)\b(line|column|col|position|offset|char(?:acter)?)\s*:?\s*(\d{1,6})\b"
)
_ENGINE_QUOTED = re.compile(
    r"""'([^'\n]{1,60})'|"([^"\n]{1,60})"|`([^`\n]{1,60})`|<([^<>\s]{1,100})>"""
)


def _query_tokens(query: str) -> set[str]:
    """The query's words, punctuation, IRIs (without brackets) and string contents: the fragments an
    engine may be quoted with."""
    from .guard import QueryRefused, _string_content, tokenize

    try:
        tokens = tokenize(query)
    except QueryRefused:
        return set()
    return {
        t.text[1:-1]
        if t.kind == "iri"
        else _string_content(t.text)
        if t.kind == "string"
        else t.text
        for t in tokens
        if t.kind not in ("ws", "comment")
    }


def _engine_message(body: str, headers: httpx.Headers, query: str) -> str | None:
    """What a caller is told of why the engine refused its own ``query``: the kind of problem its
    first line names (:data:`_ENGINE_KINDS`), the line and column it gives, and the fragments it
    quotes that are in ``query`` — built from those, never copied, so nothing of the server's own
    (hosts, paths, keys in any shape) reaches the caller; the line goes to the log. None when the
    line names no such problem."""
    if "html" in headers.get("content-type", "").lower():
        return None
    line = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")[:2000]
    kind = next((said for pattern, said in _ENGINE_KINDS if pattern.search(line)), None)
    if kind is None or line.startswith("<"):
        return None
    where = [f"{m[1].lower()} {m[2]}" for m in _ENGINE_WHERE.finditer(line)][:2]
    quoted = (next(g for g in m.groups() if g is not None) for m in _ENGINE_QUOTED.finditer(line))
    tokens = _query_tokens(
        query
    )  # whole tokens only: a substring test would answer guesses at a secret
    near = [q for q in dict.fromkeys(quoted) if q.strip() in tokens][:2]
    detail = (
        ", ".join(where) + ("; " if where and near else "") + ", ".join(f"near {q!r}" for q in near)
    )
    return f"{kind} ({detail})" if detail else kind


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return f"— {text[:200]}" if text else ""
