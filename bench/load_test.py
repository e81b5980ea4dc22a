"""Many MCP clients at once over streamable HTTP: latency, throughput, errors, server memory, result identity.

    python -m bench.load_test                       # 50 sessions x 200 calls, as fast as they can go
    python -m bench.load_test --rate 2              # each session paced at 2 calls/s (an agent's think time)
    python -m bench.load_test --rate 1,2,4,8 --rounds 1 --calls 60   # a sweep: one round per rate

Starts ``python -m server.cli --transport http --port 0 --kg movies=embedded`` on 127.0.0.1 (the MetaQA KB;
loopback only; started by :mod:`server.http_child`, as the end-to-end tests start it), builds a deterministic
pool of mixed calls (initialize, search_entities, get_relations, get_edges) from the same KB, runs every pool
call once serially as the reference, then runs ``--clients`` concurrent sessions that each make ``--calls``
calls drawn from the pool, and checks every concurrent result is identical to the serial one. It does this ``--rounds`` times and reports the server's RSS before and
after each round, so per-session state that is never freed would show as growth.

With unpaced clients the run is closed-loop: 50 clients each waiting for their previous answer keep the server
saturated, so latency ≈ clients / throughput; ``--rate`` measures latency at a given offered load instead. A
paced client behaves like an agent that thinks between calls: it starts its next call an exponentially
distributed time (mean 1/R) after starting the previous one, or at once if the previous one took longer.

The concurrent clients speak streamable HTTP directly (``--client raw``, the default: the same POSTs the SDK
client makes — initialize, notifications/initialized, tools/call, DELETE at the end — minus the SDK client's
JSON-schema validation of every result and its standalone GET stream), because on a 2-core machine 50 SDK
clients cost more CPU than the server they measure. ``--client sdk`` uses the SDK's ``ClientSession`` instead.
The serial reference always uses the SDK client, so the raw results are also checked against the SDK's reading.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import time
from contextlib import asynccontextmanager

from server.http_child import http_child

_PROTOCOL_VERSION = "2025-06-18"  # what the raw clients ask for; the server's answer is what they then send


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

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=120.0)) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                yield s


class RawSession:
    """A minimal streamable-HTTP MCP client session: initialize, then ``tools/call`` POSTs whose answer (JSON or
    an SSE stream) is read for the response with the request's id; DELETE on exit ends the server session."""

    def __init__(self, client, url: str) -> None:
        self._client, self._url = client, url
        self._headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
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
        resp = await self._post("initialize", {"protocolVersion": _PROTOCOL_VERSION, "capabilities": {},
                                               "clientInfo": {"name": "tot-load-test", "version": "1"}})
        if "error" in resp:
            raise RuntimeError(f"initialize: {resp['error']}")
        self._headers["mcp-protocol-version"] = resp["result"]["protocolVersion"]
        await self._post("notifications/initialized", {}, notify=True)

    async def call_tool(self, name: str, arguments: dict) -> "RawResult":
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


def call_pool(size: int, seed: int) -> list[tuple[str, dict]]:
    """Deterministic mixed calls over the embedded movie KB (built in-process from the same data)."""
    from kg_adapters.embedded import load_embedded

    kg = load_embedded()
    ix = kg.index
    rng = random.Random(seed)
    pool: list[tuple[str, dict]] = []
    while len(pool) < size:
        i = rng.randrange(len(ix.nodes))
        node = ix.nodes[i]
        eid = kg.node_id(i)
        kind = rng.random()
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
            pool.append(("get_edges", {"entity_ids": [eid], "relation_id": f"movies:{ix.rel_local_ids[r]}",
                                       "direction": d, "limit": 20}))
    return pool


def canonical(result) -> str:
    return json.dumps([bool(result.is_error), result.structured_content], sort_keys=True, default=str)


async def serial_reference(url: str, pool: list[tuple[str, dict]]) -> tuple[list[str], list[float]]:
    out, times = [], []
    async with session(url) as s:
        for name, args in pool:
            t0 = time.perf_counter()
            r = await s.call_tool(name, args)
            times.append(time.perf_counter() - t0)
            out.append(canonical(r))
    return out, times


async def one_client(url: str, pool, reference, k: int, calls: int, rate: float | None, seed: int, stats: dict,
                     ready: asyncio.Barrier, open_session=raw_session):
    rng = random.Random(seed * 1000 + k)
    picks = [rng.randrange(len(pool)) for _ in range(calls)]
    try:
        t0 = time.perf_counter()
        async with open_session(url) as s:
            stats["setup"].append(time.perf_counter() - t0)
            await ready.wait()  # every session is open before the first call: setup is not call latency
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
    """User + system CPU time of a process so far (from /proc, so it works for the server child too)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args) -> dict:
    pool = call_pool(args.pool, args.seed)
    open_session = raw_session if args.client == "raw" else session
    with http_child(["--kg", "movies=embedded"], startup_timeout=90.0) as child:
        url, pid = child.url, child.pid
        reference, serial_times = await serial_reference(url, pool)
        # The clients share one process: a full collection over everything loaded so far (the SDK, httpx, the
        # pool) stalled all 50 at once for 15-60 ms, which the run then counted as server latency. Freeze it.
        gc.collect()
        gc.freeze()
        rss = [("after serial reference", rss_mib(pid))]
        rounds = []
        plan = [(rate, rnd) for rate in args.rates for rnd in range(args.rounds)]
        for i, (rate, rnd) in enumerate(plan):
            stats = {"latency": [], "errors": [], "mismatches": 0, "by_tool": {}, "setup": []}
            ready = asyncio.Barrier(args.clients + 1)
            tasks = [asyncio.create_task(
                one_client(url, pool, reference, k, args.calls, rate, args.seed + i, stats, ready, open_session)
            ) for k in range(args.clients)]
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


def _rates(text: str) -> list[float | None]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected calls/s per client, e.g. 2 or 0.5,1,2,4") from None
    if not rates or any(r <= 0 for r in rates):
        raise argparse.ArgumentTypeError(f"{text!r}: rates must be > 0")
    return rates


def _run_loop(coro):
    """uvloop when installed (the clients' own event-loop overhead shares the cores with the server)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coro)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.load_test", description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--calls", type=int, default=200, help="calls per client session")
    ap.add_argument("--rate", type=_rates, default=None, metavar="R[,R...]",
                    help="calls/s per client (an agent's think time between calls); several = a sweep, "
                         "--rounds rounds each; default unpaced (closed loop)")
    ap.add_argument("--rounds", type=int, default=2, help="repeat to check the server's memory stays flat")
    ap.add_argument("--pool", type=int, default=400, help="distinct calls the clients draw from")
    ap.add_argument("--client", choices=("raw", "sdk"), default="raw",
                    help="concurrent clients: raw streamable-HTTP requests (cheap) or the SDK ClientSession")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    if min(args.clients, args.calls, args.rounds, args.pool) < 1:
        ap.error("--clients, --calls, --rounds, --pool must be ≥ 1")
    args.rates = args.rate or [None]
    res = _run_loop(run(args))
    ser = res["serial"]
    pacing = "unpaced (closed loop)" if args.rate is None else "paced at " + ", ".join(f"{r:g}" for r in args.rate) + "/s per client"
    print(f"\n| measure ({args.clients} {args.client} clients x {args.calls} calls, {pacing}) | value |\n|---|---|")
    print(f"| serial reference p50 / p99 (ms), 1 SDK client, {len(ser)} calls | "
          f"{pct(ser, .5)*1e3:.1f} / {pct(ser, .99)*1e3:.1f} |")
    ok = True
    for label, wall, st in res["rounds"]:
        lat = st["latency"]
        n = max(1, len(lat))
        print(f"| {label}: calls / errors / results differing from serial | {len(lat):,} / {len(st['errors'])} / "
              f"{st['mismatches']} |")
        print(f"| {label}: p50 / p99 / max latency (ms) | {pct(lat, .5)*1e3:.1f} / {pct(lat, .99)*1e3:.1f} / "
              f"{max(lat, default=float('nan'))*1e3:.1f} |")
        print(f"| {label}: throughput (calls/s) | {len(lat) / wall:.0f} |")
        print(f"| {label}: CPU per call, server / all clients (ms) | {st['server_cpu'] / n * 1e3:.2f} / "
              f"{st['client_cpu'] / n * 1e3:.2f} |")
        print(f"| {label}: session setup p50 / max (ms), all {len(st['setup'])} opened before the calls | "
              f"{pct(st['setup'], .5)*1e3:.0f} / {max(st['setup'], default=float('nan'))*1e3:.0f} |")
        for tool, ts in sorted(st["by_tool"].items()):
            print(f"| {label}: {tool} p50 / p99 (ms) | {pct(ts, .5)*1e3:.1f} / {pct(ts, .99)*1e3:.1f} |")
        ok = ok and not st["errors"] and not st["mismatches"]
        for e in st["errors"][:5]:
            print(f"| error | {e} |")
    for label, mib in res["rss"]:
        print(f"| server RSS {label} (MiB) | {mib:.0f} |")
    print(f"\nerrors_total: {sum(len(st['errors']) for _, _, st in res['rounds'])}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
