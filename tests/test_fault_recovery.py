"""Recovering from a SPARQL endpoint that dies and comes back, without restarting anything on our
side.

A real ``oxigraph serve`` on 127.0.0.1 is frozen (SIGSTOP) so requests are provably in flight,
killed (SIGKILL), and restarted on the same port. In-flight and later calls must fail fast with a
clear BackendError naming the endpoint (never hang, never leak an httpx exception); the breaker must
stop the hammering; and once the endpoint is back, the same KG object — and the same MCP server
process — must answer again, with the same results.

The limiter/breaker cases A's ``test_sparql_faults.py`` does not cover are added at the end
(concurrent callers).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from net_helpers import FIXTURES, answers, free_port
from sparql_fault_server import FaultServer, Reply

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import BackendError, CircuitOpen, KGError
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg

ADA = "g:ex.Ada_Lovelace"
KNOWS = "g:foaf.knows"


class Endpoint:
    """``oxigraph serve-read-only`` over one store on a fixed loopback port, which can be killed and
    restarted."""

    def __init__(self, store: Path, port: int) -> None:
        self.exe = shutil.which("oxigraph")
        self.store, self.port = store, port
        self.url = f"http://127.0.0.1:{port}/query"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        cmd = [
            self.exe,
            "serve-read-only",
            "--location",
            str(self.store),
            "--bind",
            f"127.0.0.1:{self.port}",
        ]
        deadline = time.monotonic() + 15
        while True:  # the port can take a moment to be bindable again after a kill
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while (
                not answers(self.url) and self.proc.poll() is None and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            if answers(self.url):
                return
            self.proc.kill()
            self.proc.wait()
            if time.monotonic() > deadline:
                raise RuntimeError(f"oxigraph did not start on {self.url}")
            time.sleep(0.2)

    def freeze(self) -> None:
        """SIGSTOP, and wait until the kernel shows the process stopped: on a loaded machine the
        signal can take effect after the next request was already answered."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                return  # no /proc here: the signal alone
            if state in ("T", "t"):
                return
            time.sleep(0.01)

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def endpoint(tmp_path):
    exe = shutil.which("oxigraph")
    if exe is None:
        pytest.skip("the oxigraph binary is not installed (pip install oxigraph)")
    store = tmp_path / "store"
    subprocess.run(
        [exe, "load", "--location", str(store), "--file", str(FIXTURES / "generic_sample.ttl")],
        check=True,
        capture_output=True,
    )
    ep = Endpoint(store, free_port())
    ep.start()
    yield ep
    ep.stop()


OPTIONS = {
    "retries": 1,
    "backoff": 0.05,
    "timeout": 3.0,
    "breaker_failures": 3,
    "breaker_cooldown": 0.5,
    "max_concurrent": 4,
    "search_api": "none",
}
PREFIXES = {"ex": "http://example.org/computing/"}


def sparql_kg(url: str, **extra):
    return Graph(
        open_sparql_kg(
            "g",
            "sparql",
            url,
            registry=EndpointRegistry(),
            prefixes=PREFIXES,
            **{**OPTIONS, **extra},
        )
    )


async def test_a_killed_endpoint_fails_fast_and_clearly_then_recovers_without_a_restart(endpoint):
    kg = sparql_kg(
        endpoint.url, timeout=10.0
    )  # far above the bound below, so the two cannot be confused
    before = await kg.get_edges([ADA], KNOWS)
    assert "g:ex.Charles_Babbage" in {e.target for e in before.edges}

    endpoint.freeze()
    in_flight = [asyncio.create_task(kg.get_edges([ADA], KNOWS)) for _ in range(3)]
    await asyncio.sleep(0.3)
    early = [t.exception() or t.result() for t in in_flight if t.done()]
    assert not early, f"answered while frozen: {early!r}"  # provably waiting on the frozen endpoint
    started = time.monotonic()
    endpoint.kill()
    results = await asyncio.gather(*in_flight, return_exceptions=True)
    assert (
        time.monotonic() - started < 5.0
    )  # failed on the dropped connection, not at the 10 s timeout
    for r in results:
        assert isinstance(r, BackendError), r
        assert endpoint.url in str(r) and ("connection failed" in str(r) or "suspended" in str(r))

    # while it is down: clear errors, and the breaker soon stops us from knocking at all
    errors = []
    for _ in range(4):
        with pytest.raises(KGError) as exc:
            await kg.get_relations([ADA])
        errors.append(exc.value)
    assert all(isinstance(e, BackendError) and endpoint.url in str(e) for e in errors)
    assert isinstance(errors[-1], CircuitOpen)
    attempts = kg.store.sparql.attempts
    with pytest.raises(CircuitOpen):
        await kg.get_edges([ADA], KNOWS)
    assert kg.store.sparql.attempts == attempts  # open circuit: no request was made

    endpoint.start()  # same port, same data; nothing on our side is restarted
    await asyncio.sleep(OPTIONS["breaker_cooldown"] + 0.1)
    after = await kg.get_edges([ADA], KNOWS)  # the half-open probe
    assert after == before
    assert (await kg.get_relations([ADA])).relations  # closed again


async def test_the_mcp_server_reports_the_outage_as_tool_errors_and_recovers(endpoint, tmp_path):
    from mcp_client import stdio_session

    config = tmp_path / "tot.toml"
    opts = "\n".join(f"{k} = {json.dumps(v)}" for k, v in OPTIONS.items())
    config.write_text(
        f'[kg.g]\nspec = "sparql:{endpoint.url}"\n{opts}\nprefixes = {{ ex = "{PREFIXES["ex"]}" '
        f"}}\n",
        encoding="utf-8",
    )
    args = {"entity_ids": [ADA], "relation_id": KNOWS}
    async with stdio_session(["--config", str(config)]) as session:
        ok = await session.call_tool("get_edges", args)
        assert not ok.is_error
        endpoint.kill()
        down = await session.call_tool("get_relations", {"entity_ids": [ADA]})
        assert down.is_error
        text = " ".join(getattr(c, "text", "") for c in down.content)
        assert endpoint.url in text and "Traceback" not in text
        cached = await session.call_tool(
            "get_edges", args
        )  # answered before the outage: served from the cache
        assert not cached.is_error and cached.structured_content == ok.structured_content
        endpoint.start()
        await asyncio.sleep(OPTIONS["breaker_cooldown"] + 0.1)
        again = await session.call_tool("get_relations", {"entity_ids": [ADA]})
        assert not again.is_error and again.structured_content["relations"]


# -- limiter and breaker under concurrent callers (complements test_sparql_faults.py) --------------
@pytest.fixture
def fault_server():
    with FaultServer() as s:
        yield s


def scripted_kg(server, registry, **opts):
    base = {
        "retries": 2,
        "backoff": 0.01,
        "timeout": 2.0,
        "label_search": "exact",
        "search_api": "none",
    }
    return Graph(
        open_sparql_kg("wd", "wikidata", server.url, registry=registry, **{**base, **opts})
    )


async def test_a_429_during_concurrent_calls_holds_back_every_request_after_it(fault_server):
    registry = EndpointRegistry()
    fault_server.script = [Reply(429, headers={"Retry-After": "0.4"})]
    fault_server.default = Reply(delay=0.02)
    kgs = [
        scripted_kg(fault_server, registry, max_concurrent=4) for _ in range(3)
    ]  # three KGs, one endpoint
    results = await asyncio.gather(
        *(kg.search_entities("Douglas Adams") for kg in kgs for _ in range(3))
    )
    assert all(r == [] for r in results)  # every call succeeded in the end
    first_429 = fault_server.seen[0].at
    later = [s.at for s in fault_server.seen[1:]]
    started_before = [t for t in later if t - first_429 < 0.37]
    # calls already on the wire when the 429 came back cannot be recalled; nothing new may start
    # until Retry-After
    assert len(started_before) <= 3
    assert len([t for t in later if t - first_429 >= 0.37]) >= len(results) - 3


async def test_a_slow_endpoint_bounds_every_concurrent_callers_time_and_the_breaker_ends_the_queue(
    fault_server,
):
    fault_server.default = Reply(delay=1.5)
    kg = scripted_kg(
        fault_server,
        EndpointRegistry(),
        timeout=0.2,
        retries=0,
        max_concurrent=2,
        breaker_failures=2,
        breaker_cooldown=30,
    )
    started = time.monotonic()
    results = await asyncio.gather(
        *(kg.search_entities("Douglas Adams") for _ in range(10)), return_exceptions=True
    )
    elapsed = time.monotonic() - started
    assert all(isinstance(r, BackendError) for r in results), results
    # the queue ends by the breaker, or by each call's deadline (which counts the wait for a slot):
    # whichever first
    assert all(
        isinstance(r, CircuitOpen) or "no free slot" in str(r) or "no answer" in str(r)
        for r in results
    )
    with pytest.raises(CircuitOpen):
        await kg.search_entities("Douglas Adams")
    # only the first wave reached the endpoint; the rest were refused by the open circuit instead of
    # queueing
    assert len(fault_server.seen) <= 4, len(fault_server.seen)
    assert elapsed < 1.0


async def test_after_recovery_the_breaker_closes_for_every_kg_sharing_the_endpoint(fault_server):
    registry = EndpointRegistry()
    a = scripted_kg(fault_server, registry, retries=0, breaker_failures=2, breaker_cooldown=0.2)
    b = scripted_kg(fault_server, registry, retries=0, breaker_failures=2, breaker_cooldown=0.2)
    fault_server.default = Reply(503)
    for kg in (a, b):
        with pytest.raises(BackendError):
            await kg.search_entities("x")
    with pytest.raises(CircuitOpen):
        await b.search_entities("x")  # a's failure counted for b: one breaker per endpoint
    fault_server.default = Reply()
    await asyncio.sleep(0.25)
    assert await a.search_entities("x") == []
    assert await b.search_entities("x") == []  # closed by a's successful probe


def test_outage_messages_name_the_endpoint_and_say_what_happened():
    port = free_port()  # nothing listens here
    kg = sparql_kg(f"http://127.0.0.1:{port}/query", retries=0)
    with pytest.raises(
        BackendError, match=re.escape(f"http://127.0.0.1:{port}/query") + r": connection failed"
    ):
        asyncio.run(kg.get_relations([ADA]))
