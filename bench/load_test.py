"""Many MCP clients at once over streamable HTTP: latency, throughput, errors, server memory, result
identity.

    python -m bench.load_test                      # 50 sessions x 200 calls, as fast as they can go
    python -m bench.load_test --rate 2             # each session paced at 2 calls/s (think time)
    python -m bench.load_test --rate 1,2,4,8 --rounds 1 --calls 60   # a sweep: one round per rate

Starts ``python -m server.cli --transport http --port 0 --kg movies=embedded`` on 127.0.0.1 (the
MetaQA KB; loopback only; started by :mod:`server.http_child`, as the end-to-end tests start it),
builds a deterministic pool of mixed calls (initialize, search_entities, get_relations, get_edges)
from the same KB, runs every pool call once serially as the reference, then runs ``--clients``
concurrent sessions that each make ``--calls`` calls drawn from the pool, and checks every
concurrent result is identical to the serial one. It does this ``--rounds`` times and reports the
server's RSS before and after each round, so per-session state that is never freed would show as
growth.

With unpaced clients the run is closed-loop: 50 clients each waiting for their previous answer keep
the server saturated, so latency ≈ clients / throughput; ``--rate`` measures latency at a given
offered load instead. A paced client behaves like an agent that thinks between calls: it starts its
next call an exponentially distributed time (mean 1/R) after starting the previous one, or at once
if the previous one took longer.

The concurrent clients speak streamable HTTP directly (``--client raw``, the default: the same POSTs
the SDK client makes — initialize, notifications/initialized, tools/call, DELETE at the end — minus
the SDK client's JSON-schema validation of every result and its standalone GET stream), because on a
2-core machine 50 SDK clients cost more CPU than the server they measure. ``--client sdk`` uses the
SDK's ``ClientSession`` instead. The serial reference always uses the SDK client, so the raw results
are also checked against the SDK's reading.

Scale-out (``--processes 1,2``): start that many ``tot-mcp --transport http --stateless`` processes
behind a small round-robin HTTP proxy on loopback (:class:`RoundRobinProxy`, here in this file, run
in its own process: every request goes to the next backend in turn, no stickiness, JSON and SSE
answers relayed as they arrive; it serves a bounded number of requests for a bounded time and then
stops by itself), run ``--clients`` clients through the proxy for each process count, and print one
table with throughput, p50 / p99, errors and the CPU per call of servers, proxy and clients side by
side. Every result is again compared with the SDK client's serial reading. The clients are lean
(:class:`LeanSession`: plain asyncio HTTP/1.1, ~0.3 ms of CPU per call instead of the httpx raw
client's ~2 ms, so that on a small machine the CPU goes to the servers being compared) and
session-less: ``--era legacy`` (2025-era requests without ``Mcp-Session-Id``, which ``--stateless``
serves) or ``--era modern`` (2026-07-28 requests, each carrying its protocol version in ``_meta``).

    python -m bench.load_test --processes 1,2 --clients 50 --calls 100 --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from tot_mcp.server.http_child import REPO, http_child, server_env

_PROTOCOL_VERSION = (
    "2025-06-18"  # what the raw clients ask for; the server's answer is what they then send
)
_MODERN_VERSION = "2026-07-28"  # the session-less protocol revision (--era modern)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


@asynccontextmanager
async def session(url: str):
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=120.0)) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as s,
    ):
        await s.initialize()
        yield s


class RawSession:
    """A minimal streamable-HTTP MCP client session: initialize, then ``tools/call`` POSTs whose
    answer (JSON or an SSE stream) is read for the response with the request's id; DELETE on exit
    ends the server session."""

    def __init__(self, client, url: str) -> None:
        self._client, self._url = client, url
        self._headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self._next_id = 0

    async def _post(self, method: str, params: dict, notify: bool = False) -> dict | None:
        msg: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            self._next_id += 1
            msg["id"] = self._next_id
        r = await self._client.post(self._url, content=json.dumps(msg), headers=self._headers)
        if r.status_code >= 400:
            raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
        if sid := r.headers.get("mcp-session-id"):
            self._headers["mcp-session-id"] = sid
        if notify:
            return None
        if r.headers.get("content-type", "").startswith("application/json"):
            return r.json()
        for line in r.text.splitlines():  # SSE: notifications (progress) may precede the response
            if line.startswith("data:") and line[5:].strip():
                obj = json.loads(line[5:])
                if obj.get("id") == msg["id"]:
                    return obj
        raise RuntimeError(f"{method}: no response in the SSE stream")

    async def initialize(self) -> None:
        resp = await self._post(
            "initialize",
            {
                "protocolVersion": _PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "tot-load-test", "version": "1"},
            },
        )
        if "error" in resp:
            raise RuntimeError(f"initialize: {resp['error']}")
        self._headers["mcp-protocol-version"] = resp["result"]["protocolVersion"]
        await self._post("notifications/initialized", {}, notify=True)

    async def call_tool(self, name: str, arguments: dict) -> RawResult:
        resp = await self._post("tools/call", {"name": name, "arguments": arguments})
        if "error" in resp:
            raise RuntimeError(f"JSON-RPC error {resp['error']}")
        res = resp["result"]
        return RawResult(bool(res.get("isError", False)), res.get("structuredContent"))

    async def close(self) -> None:
        if "mcp-session-id" in self._headers:
            await self._client.delete(self._url, headers=self._headers)


class RawResult:
    __slots__ = ("is_error", "structured_content")

    def __init__(self, is_error: bool, structured_content) -> None:
        self.is_error, self.structured_content = is_error, structured_content


@asynccontextmanager
async def raw_session(url: str):
    import httpx

    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=120.0)) as client:
        s = RawSession(client, url)
        await s.initialize()
        try:
            yield s
        finally:
            await s.close()


# -- scale-out: a round-robin reverse proxy --------------------------------------------------------
class RoundRobinProxy:
    """A small HTTP/1.1 reverse proxy on 127.0.0.1 that sends each request to the next backend in
    turn.

    No stickiness of any kind: two requests of one client connection, or one MCP session, go to
    different backends — what a load balancer without sticky sessions does, and what ``tot-mcp
    --stateless`` must survive. Request and response heads are relayed unchanged (the backends see
    the proxy's ``Host``); bodies are relayed as they arrive (``Content-Length``, chunked — the SSE
    answers of streamable HTTP — or until the backend closes). Backend connections are kept alive
    and reused. Bounded: after ``max_requests`` requests or ``max_seconds`` it answers 503 and
    :meth:`wait_done` returns; :meth:`aclose` stops it."""

    # a pooled backend connection idle longer is dropped (uvicorn closes idle ones after 5 s)
    IDLE_REUSE_S = 2.0

    def __init__(
        self, backends: Sequence[str], *, max_requests: int = 1_000_000, max_seconds: float = 3600.0
    ) -> None:
        if not backends:
            raise ValueError("the proxy needs at least one backend")
        self._backends = [
            (u.hostname or "127.0.0.1", u.port or 80) for u in map(urlsplit, backends)
        ]
        self._path = urlsplit(backends[0]).path
        self.max_requests, self.max_seconds = max_requests, max_seconds
        self.counts = [0] * len(backends)  # requests sent to each backend
        self.requests = self.failures = 0
        self._next = 0
        self._pool: list[list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]]] = [
            [] for _ in backends
        ]
        self._server: asyncio.base_events.Server | None = None
        self._done = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()
        self._deadline = 0.0

    async def start(self) -> str:
        """Listen on a free loopback port; returns the proxy's URL (same path as the backends')."""
        self._server = await asyncio.start_server(self._serve_client, "127.0.0.1", 0, limit=1 << 20)
        self._deadline = time.monotonic() + self.max_seconds
        loop = asyncio.get_running_loop()
        loop.call_at(loop.time() + self.max_seconds, self._done.set)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}{self._path}"

    async def wait_done(self) -> None:
        await self._done.wait()

    async def aclose(self) -> None:
        self._done.set()
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for pool in self._pool:
            for _, writer, _ in pool:
                writer.close()
            pool.clear()

    def _exhausted(self) -> bool:
        if self.requests >= self.max_requests or time.monotonic() > self._deadline:
            self._done.set()
        return self._done.is_set()

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                head = await _read_head(reader)
                if head is None:
                    break
                length = int(_header(head, b"content-length") or 0)
                if _header(head, b"transfer-encoding"):
                    await _send_plain(writer, 411, b"the proxy needs Content-Length request bodies")
                    break
                body = await reader.readexactly(length) if length else b""
                if self._exhausted():
                    await _send_plain(writer, 503, b"proxy request budget or time is used up")
                    break
                self.requests += 1
                backend = self._next % len(self._backends)
                self._next += 1
                self.counts[backend] += 1
                if not await self._forward(backend, head, body, writer):
                    break
                if (_header(head, b"connection") or b"").lower() == b"close":
                    break
        except (
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ValueError,
        ):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _connection(self, backend: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        pool = self._pool[backend]
        now = time.monotonic()
        while pool:
            reader, writer, since = pool.pop()
            if now - since < self.IDLE_REUSE_S and not writer.is_closing():
                return reader, writer
            writer.close()
        host, port = self._backends[backend]
        return await asyncio.open_connection(host, port, limit=1 << 20)

    async def _forward(
        self, backend: int, head: bytes, body: bytes, client: asyncio.StreamWriter
    ) -> bool:
        """Relay one request and its response; False when the client connection must close
        afterwards."""
        reader, writer = await self._connection(backend)
        try:
            writer.write(head + body)
            response = await _read_head(reader)
            if response is None:
                raise ConnectionError("backend closed the connection")
        except (ConnectionError, asyncio.IncompleteReadError):
            writer.close()
            self.failures += 1
            await _send_plain(client, 502, b"backend unavailable")
            return False
        client.write(response)
        status = int(response.split(b" ", 2)[1])
        reusable = (_header(response, b"connection") or b"").lower() != b"close"
        if head.startswith(b"HEAD ") or status in (204, 304) or 100 <= status < 200:
            pass
        elif (_header(response, b"transfer-encoding") or b"").lower() == b"chunked":
            while True:  # chunk by chunk, so SSE events reach the client as the server sends them
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0], 16)
                client.write(size_line + await reader.readexactly(size + 2))
                await client.drain()
                if size == 0:
                    break
        elif (length := _header(response, b"content-length")) is not None:
            client.write(await reader.readexactly(int(length)))
        else:  # delimited by the backend closing the connection
            while data := await reader.read(1 << 16):
                client.write(data)
            reusable = False
        await client.drain()
        if reusable:
            self._pool[backend].append((reader, writer, time.monotonic()))
        else:
            writer.close()
        return reusable


async def _read_head(reader: asyncio.StreamReader) -> bytes | None:
    """One HTTP message head (start line + headers + blank line), or None at a clean end of the
    stream."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if not e.partial:
            return None
        raise


def _header(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, sep, value = line.partition(b":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


async def _send_plain(writer: asyncio.StreamWriter, status: int, text: bytes) -> None:
    writer.write(
        b"HTTP/1.1 %d Proxy\r\ncontent-type: text/plain\r\ncontent-length: %d\r\nconnection: "
        b"close\r\n\r\n%s" % (status, len(text), text)
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def proxy_main(argv: Sequence[str] | None = None) -> int:
    """``python -c 'from bench.load_test import proxy_main; proxy_main()' URL...``: run a
    :class:`RoundRobinProxy` in its own process (so its CPU is not the clients'), print ``proxy at
    URL``, serve until the budget or the time is used up or SIGTERM, then print ``proxy served N
    requests: a/b/...``."""
    import signal

    ap = argparse.ArgumentParser(prog="round-robin proxy")
    ap.add_argument("backends", nargs="+")
    ap.add_argument("--max-requests", type=int, default=1_000_000)
    ap.add_argument("--max-seconds", type=float, default=3600.0)
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)

    async def serve() -> None:
        proxy = RoundRobinProxy(
            args.backends, max_requests=args.max_requests, max_seconds=args.max_seconds
        )
        url = await proxy.start()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, proxy._done.set)
        print(f"proxy at {url}", flush=True)
        await proxy.wait_done()
        await proxy.aclose()
        print(
            f"proxy served {proxy.requests} requests: {'/'.join(map(str, proxy.counts))}; "
            f"{proxy.failures} backend failures",
            flush=True,
        )

    _run_loop(serve())
    return 0


@contextlib.contextmanager
def proxy_process(
    backends: Sequence[str], *, max_requests: int, max_seconds: float
) -> Iterator[tuple[str, int, list]]:
    """A :func:`proxy_main` child process; yields (its URL, its pid, the lines it printed when it
    stopped)."""
    code = "import sys; from bench.load_test import proxy_main; sys.exit(proxy_main())"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            code,
            *backends,
            "--max-requests",
            str(max_requests),
            "--max-seconds",
            str(max_seconds),
        ],
        cwd=str(REPO),
        env=server_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    report: list[str] = []
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if not first.startswith("proxy at "):
            raise RuntimeError(f"the proxy did not start (exit {proc.wait()}): {first!r}")
        yield first.split()[-1], proc.pid, report
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        report.extend(line for line in (out or "").splitlines() if line)


class LeanSession:
    """The scale-out mode's client: one keep-alive HTTP/1.1 connection, each ``tools/call`` written
    as prepared bytes and its answer (JSON or SSE; ``Content-Length`` or chunked) read by hand. No
    HTTP library: about a tenth of the httpx client's CPU per call, so 50 clients leave the cores
    they share with the servers to the servers.

    Session-less in both eras: ``legacy`` sends ``initialize`` once (the stateless server gives no
    session ID) and then 2025-era requests with only ``Mcp-Protocol-Version``; ``modern`` sends
    2026-07-28 requests, each with the ``_meta`` envelope (protocol version, client info,
    capabilities) and the ``Mcp-Method`` / ``Mcp-Name`` headers."""

    def __init__(self, url: str, era: str = "legacy") -> None:
        u = urlsplit(url)
        self._host, self._port, self._path, self._era = (
            u.hostname or "127.0.0.1",
            u.port or 80,
            u.path,
            era,
        )
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._prepared: dict[
            int, tuple[bytes, tuple]
        ] = {}  # id(arguments) -> (request, arguments kept alive)
        version = _MODERN_VERSION if era == "modern" else _PROTOCOL_VERSION
        self._envelope = None
        if era == "modern":
            from mcp_types import (
                CLIENT_CAPABILITIES_META_KEY,
                CLIENT_INFO_META_KEY,
                PROTOCOL_VERSION_META_KEY,
            )

            self._envelope = {
                PROTOCOL_VERSION_META_KEY: version,
                CLIENT_CAPABILITIES_META_KEY: {},
                CLIENT_INFO_META_KEY: {"name": "tot-load-test", "version": "1"},
            }
        self._version = version

    def _request(self, method: str, params: dict, *, notify: bool = False) -> bytes:
        msg: dict = {"jsonrpc": "2.0", "method": method, "params": params}
        extra = f"mcp-protocol-version: {self._version}\r\n"
        if self._envelope is not None:
            msg["params"] = {**params, "_meta": self._envelope}
            extra += f"mcp-method: {method}\r\n" + (
                f"mcp-name: {params['name']}\r\n" if "name" in params else ""
            )
        if not notify:
            msg["id"] = 1  # one request at a time on this connection
        body = json.dumps(msg, separators=(",", ":")).encode()
        head = (
            f"POST {self._path} HTTP/1.1\r\nhost: {self._host}:{self._port}\r\n"
            "accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n{extra}\r\n"
        )
        return head.encode() + body

    async def _exchange(self, request: bytes) -> dict | None:
        assert self._reader is not None and self._writer is not None
        self._writer.write(request)
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        if (_header(head, b"transfer-encoding") or b"").lower() == b"chunked":
            parts = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                parts.append((await self._reader.readexactly(size + 2))[:-2])
                if size == 0:
                    break
            body = b"".join(parts)
        else:
            body = await self._reader.readexactly(int(_header(head, b"content-length") or 0))
        if status >= 400:
            raise RuntimeError(f"HTTP {status}: {body[:200].decode(errors='replace')}")
        if not body:
            return None
        if (_header(head, b"content-type") or b"").startswith(b"application/json"):
            return json.loads(body)
        for line in body.split(b"\n"):  # SSE: notifications (progress) may precede the response
            if line.startswith(b"data:") and b'"id":1' in line:
                return json.loads(line[5:])
        raise RuntimeError("no response in the SSE stream")

    async def initialize(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(
            self._host, self._port, limit=1 << 22
        )
        if self._era == "legacy":
            resp = await self._exchange(
                self._request(
                    "initialize",
                    {
                        "protocolVersion": _PROTOCOL_VERSION,
                        "capabilities": {},
                        "clientInfo": {"name": "tot-load-test", "version": "1"},
                    },
                )
            )
            if not resp or "error" in resp:
                raise RuntimeError(f"initialize: {resp}")
            await self._exchange(self._request("notifications/initialized", {}, notify=True))

    async def call_tool(self, name: str, arguments: dict) -> RawResult:
        prepared = self._prepared.get(id(arguments))
        if prepared is None:
            prepared = self._prepared[id(arguments)] = (
                self._request("tools/call", {"name": name, "arguments": arguments}),
                (name, arguments),
            )
        resp = await self._exchange(prepared[0])
        if resp is None or "error" in resp:
            raise RuntimeError(f"JSON-RPC error {resp and resp['error']}")
        res = resp["result"]
        return RawResult(bool(res.get("isError", False)), res.get("structuredContent"))

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


@asynccontextmanager
async def lean_session(url: str, era: str = "legacy"):
    s = LeanSession(url, era)
    await s.initialize()
    try:
        yield s
    finally:
        await s.close()


#: ``--mix``: which tools the pool draws. ``steps``: the step tools alone (a client model walking
#: the graph itself; each call is a fraction of a millisecond of server work). ``agent``: the same,
#: with one call in five a whole ``tree_of_traversals`` search (offline policy, k = 1) on a
#: one-relation question about a pool entity.
MIXES = ("steps", "agent")


def call_pool(size: int, seed: int, mix: str = "steps") -> list[tuple[str, dict]]:
    """Deterministic mixed calls over the embedded movie KB (built in-process from the same
    data)."""
    from tot_mcp.kg_adapters.embedded import load_embedded

    kg = load_embedded()
    ix = kg.index
    rng = random.Random(seed)
    pool: list[tuple[str, dict]] = []
    while len(pool) < size:
        i = rng.randrange(len(ix.nodes))
        node = ix.nodes[i]
        eid = kg.node_id(i)
        kind = rng.random()
        if mix == "agent" and kind < 0.2:
            rels = list(ix.out[i])
            if not rels:
                continue
            phrase = ix.rel_labels[rng.choice(rels)].replace("_", " ")
            pool.append(
                (
                    "tree_of_traversals",
                    {"query": f"what is the {phrase} of [{node.label}]?", "k": 1},
                )
            )
            continue
        if kind < 0.15:
            pool.append(("initialize", {"query": f"what is related to [{node.label}]?"}))
        elif kind < 0.3:
            pool.append(("search_entities", {"text": node.label, "limit": 5}))
        elif kind < 0.6:
            pool.append(("get_relations", {"entity_ids": [eid]}))
        else:
            dirs = [("forward", r) for r in ix.out[i]] + [("backward", r) for r in ix.inc[i]]
            if not dirs:
                continue
            d, r = rng.choice(dirs)
            pool.append(
                (
                    "get_edges",
                    {
                        "entity_ids": [eid],
                        "relation_id": f"movies:{ix.rel_local_ids[r]}",
                        "direction": d,
                        "limit": 20,
                    },
                )
            )
    return pool


#: result fields that differ between two runs of the same call by design: the tree viewer's per-call
#: resource URI
_PER_CALL = ("view",)


def canonical(result) -> str:
    content = result.structured_content
    if isinstance(content, dict):
        content = {k: v for k, v in content.items() if k not in _PER_CALL}
    return json.dumps([bool(result.is_error), content], sort_keys=True, default=str)


async def serial_reference(url: str, pool: list[tuple[str, dict]]) -> tuple[list[str], list[float]]:
    out, times = [], []
    async with session(url) as s:
        for name, args in pool:
            t0 = time.perf_counter()
            r = await s.call_tool(name, args)
            times.append(time.perf_counter() - t0)
            out.append(canonical(r))
    return out, times


async def one_client(
    url: str,
    pool,
    reference,
    k: int,
    calls: int,
    rate: float | None,
    seed: int,
    stats: dict,
    ready: asyncio.Barrier,
    open_session=raw_session,
):
    rng = random.Random(seed * 1000 + k)
    picks = [rng.randrange(len(pool)) for _ in range(calls)]
    try:
        t0 = time.perf_counter()
        async with open_session(url) as s:
            stats["setup"].append(time.perf_counter() - t0)
            await (
                ready.wait()
            )  # every session is open before the first call: setup is not call latency
            if rate:
                await asyncio.sleep(rng.uniform(0, 1 / rate))  # paced clients start out of phase
            for j in picks:
                t0 = time.perf_counter()
                try:
                    r = await s.call_tool(*pool[j])
                except Exception as e:  # noqa: BLE001 - counted and reported, not fatal for the run
                    stats["errors"].append(f"{pool[j][0]}: {type(e).__name__}: {e}")
                    continue
                dt = time.perf_counter() - t0
                stats["latency"].append(dt)
                stats["by_tool"].setdefault(pool[j][0], []).append(dt)
                if r.is_error and not reference[j].startswith("[true"):
                    stats["errors"].append(f"{pool[j][0]}: tool error")
                if canonical(r) != reference[j]:
                    stats["mismatches"] += 1
                if rate:
                    await asyncio.sleep(max(0.0, rng.expovariate(rate) - dt))
    except Exception as e:  # noqa: BLE001
        stats["errors"].append(f"session {k}: {type(e).__name__}: {e}")
        await ready.abort()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (from /proc, so it works for the server child
    too)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args) -> dict:
    pool = call_pool(args.pool, args.seed, args.mix)
    open_session = raw_session if args.client == "raw" else session
    with http_child(["--kg", "movies=embedded"], startup_timeout=90.0) as child:
        url, pid = child.url, child.pid
        reference, serial_times = await serial_reference(url, pool)
        # The clients share one process: a full collection over everything loaded so far (the SDK,
        # httpx, the pool) stalled all 50 at once for 15-60 ms, which the run then counted as server
        # latency. Freeze it.
        gc.collect()
        gc.freeze()
        rss = [("after serial reference", rss_mib(pid))]
        rounds = []
        plan = [(rate, rnd) for rate in args.rates for rnd in range(args.rounds)]
        for i, (rate, rnd) in enumerate(plan):
            stats = {"latency": [], "errors": [], "mismatches": 0, "by_tool": {}, "setup": []}
            ready = asyncio.Barrier(args.clients + 1)
            tasks = [
                asyncio.create_task(
                    one_client(
                        url,
                        pool,
                        reference,
                        k,
                        args.calls,
                        rate,
                        args.seed + i,
                        stats,
                        ready,
                        open_session,
                    )
                )
                for k in range(args.clients)
            ]
            try:
                await ready.wait()
            except asyncio.BrokenBarrierError:
                pass
            t0, server_cpu, client_cpu = time.perf_counter(), cpu_seconds(pid), time.process_time()
            await asyncio.gather(*tasks)
            wall = time.perf_counter() - t0
            stats["server_cpu"] = cpu_seconds(pid) - server_cpu
            stats["client_cpu"] = time.process_time() - client_cpu
            label = f"round {i + 1}" + (f" ({rate:g}/s per client)" if rate else "")
            rss.append((f"after {label}", rss_mib(pid)))
            rounds.append((label, wall, stats))
    return {"pool": pool, "serial": serial_times, "rss": rss, "rounds": rounds}


async def run_scaled(args) -> dict:
    """``--processes``: for each process count, that many ``--stateless`` servers behind a
    round-robin proxy."""
    from functools import partial

    pool = call_pool(args.pool, args.seed, args.mix)
    open_session = partial(lean_session, era=args.era)
    calls_per_round = args.clients * args.calls
    rows = []
    with contextlib.ExitStack() as stack:
        children = [
            stack.enter_context(
                http_child(["--kg", "movies=embedded", "--stateless"], startup_timeout=120.0)
            )
            for _ in range(max(args.processes))
        ]
        reference, _ = await serial_reference(
            children[0].url, pool
        )  # the SDK client, straight to one server
        for child in children[
            1:
        ]:  # the others serve the same pool once (warm-up, and the same answers)
            other, _ = await serial_reference(child.url, pool)
            if other != reference:
                raise RuntimeError(
                    f"server {child.url} answers the pool differently from {children[0].url}"
                )
        gc.collect()
        gc.freeze()
        load_before = os.getloadavg()
        for n in args.processes:
            backends = children[:n]
            budget = (calls_per_round + 4 * args.clients) * args.rounds + 2 * len(pool)
            with proxy_process(
                [c.url for c in backends], max_requests=budget, max_seconds=args.proxy_max_seconds
            ) as (url, proxy_pid, report):
                async with open_session(url) as warm:  # through the proxy once, unmeasured
                    for name, call_args in pool[: 4 * n]:
                        await warm.call_tool(name, call_args)
                for rnd in range(args.rounds):
                    stats = {
                        "latency": [],
                        "errors": [],
                        "mismatches": 0,
                        "by_tool": {},
                        "setup": [],
                    }
                    ready = asyncio.Barrier(args.clients + 1)
                    tasks = [
                        asyncio.create_task(
                            one_client(
                                url,
                                pool,
                                reference,
                                k,
                                args.calls,
                                None,
                                args.seed + rnd,
                                stats,
                                ready,
                                open_session,
                            )
                        )
                        for k in range(args.clients)
                    ]
                    with contextlib.suppress(asyncio.BrokenBarrierError):
                        await ready.wait()
                    pids = [c.pid for c in backends]
                    cpu0 = (
                        [cpu_seconds(p) for p in pids],
                        cpu_seconds(proxy_pid),
                        time.process_time(),
                    )
                    t0 = time.perf_counter()
                    await asyncio.gather(*tasks)
                    wall = time.perf_counter() - t0
                    stats["server_cpu"] = sum(cpu_seconds(p) - c for p, c in zip(pids, cpu0[0]))
                    stats["proxy_cpu"] = cpu_seconds(proxy_pid) - cpu0[1]
                    stats["client_cpu"] = time.process_time() - cpu0[2]
                    stats["proxy_report"] = report  # filled in when the proxy stops
                    rows.append((n, rnd + 1, wall, stats))
    return {"rows": rows, "load": (load_before, os.getloadavg()), "serial_calls": len(pool)}


def print_scaled(res: dict, args) -> bool:
    rows = res["rows"]
    base = {rnd: len(st["latency"]) / wall for n, rnd, wall, st in rows if n == min(args.processes)}
    print(
        f"\n{args.clients} raw {args.era}-era clients x {args.calls} calls per round ({args.mix} "
        "mix), unpaced (closed loop), "
        f"through a round-robin proxy to N `tot-mcp --transport http --stateless` processes "
        f"({os.cpu_count()} CPUs; load average before / after: "
        f"{'/'.join(f'{x:.1f}' for x in res['load'][0])} / "
        f"{'/'.join(f'{x:.1f}' for x in res['load'][1])})\n"
    )
    print(
        "| server processes | round | calls / errors / differing from serial | throughput "
        "(calls/s) | vs 1 process | p50 / p99 / max latency (ms) | CPU per call: servers / proxy / "
        "clients (ms) | CPU-bound ceiling vs 1 process | requests per backend |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    ok = True
    for n, rnd, wall, st in rows:
        lat, calls = st["latency"], max(1, len(st["latency"]))
        rate = len(lat) / wall
        counts = next(
            (
                line.split(": ", 1)[1].split(";")[0]
                for line in st.get("proxy_report", [])
                if line.startswith("proxy served")
            ),
            "(see below)",
        )
        print(
            f"| {n} | {rnd} | {len(lat):,} / {len(st['errors'])} / {st['mismatches']} | {rate:.0f} "
            f"| {rate / base[rnd]:.2f}x | {pct(lat, 0.5) * 1e3:.1f} / {pct(lat, 0.99) * 1e3:.1f} / "
            f"{max(lat, default=float('nan')) * 1e3:.1f} | {st['server_cpu'] / calls * 1e3:.2f} / "
            f"{st['proxy_cpu'] / calls * 1e3:.2f} / {st['client_cpu'] / calls * 1e3:.2f} | "
            f"{ceiling(st, calls) / base[rnd]:.2f}x | {counts} |"
        )
        ok = ok and not st["errors"] and not st["mismatches"]
        for e in st["errors"][:5]:
            print(f"| error | {e} |")
    print(
        "\nThe ceiling: calls/s with every core busy at the CPU per call measured in that row, "
        "over one process's throughput (servers, proxy and clients share the cores, so cheap calls "
        "cannot double)."
    )
    print(f"\nerrors_total: {sum(len(st['errors']) for _, _, _, st in rows)}")
    return ok


def ceiling(st: dict, calls: int) -> float:
    """Calls/s this run could reach with every core busy at the CPU per call it measured (servers,
    proxy and clients share the machine's cores): the most N processes can show against one on this
    machine."""
    per_call = (st["server_cpu"] + st["proxy_cpu"] + st["client_cpu"]) / calls
    return (os.cpu_count() or 1) / per_call if per_call > 0 else float("nan")


def _rates(text: str) -> list[float | None]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected calls/s per client, e.g. 2 or 0.5,1,2,4"
        ) from None
    if not rates or any(r <= 0 for r in rates):
        raise argparse.ArgumentTypeError(f"{text!r}: rates must be > 0")
    return rates


def _process_counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected process counts, e.g. 1,2") from None
    if not counts or any(not 1 <= c <= 16 for c in counts):
        raise argparse.ArgumentTypeError(f"{text!r}: process counts must be 1-16")
    return sorted(set(counts))


def _run_loop(coro):
    """uvloop when installed (the clients' own event-loop overhead shares the cores with the
    server)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.load_test", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--calls", type=int, default=200, help="calls per client session")
    ap.add_argument(
        "--rate",
        type=_rates,
        default=None,
        metavar="R[,R...]",
        help="calls/s per client (an agent's think time between calls); several = a sweep, "
        "--rounds rounds each; default unpaced (closed loop)",
    )
    ap.add_argument(
        "--rounds", type=int, default=2, help="repeat to check the server's memory stays flat"
    )
    ap.add_argument("--pool", type=int, default=400, help="distinct calls the clients draw from")
    ap.add_argument(
        "--client",
        choices=("raw", "sdk"),
        default="raw",
        help="concurrent clients: raw streamable-HTTP requests (cheap) or the SDK ClientSession",
    )
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument(
        "--mix",
        choices=MIXES,
        default="steps",
        help="the calls: the step tools alone (steps) or with one whole offline tree search in "
        "five (agent)",
    )
    ap.add_argument(
        "--processes",
        type=_process_counts,
        default=None,
        metavar="N[,N...]",
        help="scale-out mode: N `--stateless` server processes behind a round-robin proxy, for "
        "each N (e.g. 1,2), side by side in one table",
    )
    ap.add_argument(
        "--era",
        choices=("legacy", "modern"),
        default="legacy",
        help=(
            "scale-out mode: session-less 2025-era requests (legacy) or 2026-07-28 requests "
            "(modern)"
        ),
    )
    ap.add_argument(
        "--proxy-max-seconds",
        type=float,
        default=900.0,
        help="scale-out mode: the proxy stops by itself after this long (it also stops after the "
        "requests the run needs)",
    )
    args = ap.parse_args(argv)
    if min(args.clients, args.calls, args.rounds, args.pool) < 1:
        ap.error("--clients, --calls, --rounds, --pool must be ≥ 1")
    if args.processes is not None:
        if args.rate is not None or args.client != "raw":
            ap.error("--processes runs unpaced raw clients: leave out --rate and --client")
        if args.proxy_max_seconds <= 0:
            ap.error("--proxy-max-seconds must be > 0")
        return 0 if print_scaled(_run_loop(run_scaled(args)), args) else 1
    args.rates = args.rate or [None]
    res = _run_loop(run(args))
    ser = res["serial"]
    pacing = (
        "unpaced (closed loop)"
        if args.rate is None
        else "paced at " + ", ".join(f"{r:g}" for r in args.rate) + "/s per client"
    )
    print(
        f"\n| measure ({args.clients} {args.client} clients x {args.calls} calls, {pacing}) | "
        "value |\n|---|---|"
    )
    print(
        f"| serial reference p50 / p99 (ms), 1 SDK client, {len(ser)} calls | "
        f"{pct(ser, 0.5) * 1e3:.1f} / {pct(ser, 0.99) * 1e3:.1f} |"
    )
    ok = True
    for label, wall, st in res["rounds"]:
        lat = st["latency"]
        n = max(1, len(lat))
        print(
            f"| {label}: calls / errors / results differing from serial | {len(lat):,} / "
            f"{len(st['errors'])} / {st['mismatches']} |"
        )
        print(
            f"| {label}: p50 / p99 / max latency (ms) | {pct(lat, 0.5) * 1e3:.1f} / "
            f"{pct(lat, 0.99) * 1e3:.1f} / {max(lat, default=float('nan')) * 1e3:.1f} |"
        )
        print(f"| {label}: throughput (calls/s) | {len(lat) / wall:.0f} |")
        print(
            f"| {label}: CPU per call, server / all clients (ms) | "
            f"{st['server_cpu'] / n * 1e3:.2f} / {st['client_cpu'] / n * 1e3:.2f} |"
        )
        print(
            f"| {label}: session setup p50 / max (ms), all {len(st['setup'])} opened before the "
            f"calls | {pct(st['setup'], 0.5) * 1e3:.0f} / "
            f"{max(st['setup'], default=float('nan')) * 1e3:.0f} |"
        )
        for tool, ts in sorted(st["by_tool"].items()):
            print(
                f"| {label}: {tool} p50 / p99 (ms) | {pct(ts, 0.5) * 1e3:.1f} / "
                f"{pct(ts, 0.99) * 1e3:.1f} |"
            )
        ok = ok and not st["errors"] and not st["mismatches"]
        for e in st["errors"][:5]:
            print(f"| error | {e} |")
    for label, mib in res["rss"]:
        print(f"| server RSS {label} (MiB) | {mib:.0f} |")
    print(f"\nerrors_total: {sum(len(st['errors']) for _, _, st in res['rounds'])}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
