"""A hostile endpoint's answer is bounded in what it parses to, not only in bytes (#36, item 6):
51 MB of valid SPARQL JSON (180k small bindings, under the 64 MiB cap) cost +695 MB RSS for one
``get_relations`` and stalled the event loop 3.5 s. Now its JSON items are counted as it is read,
before anything is built; beyond the cap the call is refused with one line naming the endpoint, and
a big answer under it is parsed in a worker thread."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sparql_fault_server import FaultServer, Reply

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import BackendRefused
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg
from tot_mcp.kg_adapters.sparql.endpoint import MAX_JSON_ITEMS, json_items

TESTS = Path(__file__).resolve().parent


def bindings(n: int, width: int = 0) -> bytes:
    """SPARQL JSON of ``n`` one-column bindings, built as bytes (no Python objects to inflate the
    baseline)."""
    pad = b"x" * width
    row = b'{"r":{"type":"uri","value":"http://example.org/p/%d%s"}}'
    rows = b",".join(row % (i, pad) for i in range(n))
    return b'{"head":{"vars":["r"]},"results":{"bindings":[' + rows + b"]}}"


def kg_at(url: str):
    return Graph(
        open_sparql_kg(
            "h", "sparql", url, registry=EndpointRegistry(), retries=2, backoff=0.01, timeout=20
        )
    )


def test_the_count_is_never_under_what_json_builds():
    import json

    shapes = (
        bindings(3),
        b"[]",
        b"{}",
        b'[1,[2,{"a":[3,4]}],"x,y"]',
        b'{"a":{"b":{}},"c":[[],[1]]}',
    )
    for body in shapes:
        built = 0
        stack = [json.loads(body)]
        while stack:
            v = stack.pop()
            built += 1
            if isinstance(v, dict):
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
        assert 2 * json_items(body) >= built - 1, body


async def test_an_answer_of_too_many_items_is_refused_in_one_line_naming_the_endpoint():
    with FaultServer() as server:
        server.default = Reply(body=bindings(MAX_JSON_ITEMS // 3))
        started = time.monotonic()
        with pytest.raises(BackendRefused) as refused:
            await kg_at(server.url).get_relations(["h:~aHR0cDovL2V4YW1wbGUub3JnL2E"])
        assert time.monotonic() - started < 5
        assert len(server.seen) == 1  # a refusal: not asked again
    text = str(refused.value)
    assert "\n" not in text and text.startswith(server.url)
    assert (
        f"holds more than {MAX_JSON_ITEMS:,} JSON items (rows, values); select fewer rows" in text
    )


async def test_a_big_answer_under_the_cap_is_parsed_off_the_event_loop(monkeypatch):
    """10 MB of 100k bindings (the item cap raised for it) are parsed in a worker thread, and the
    event loop goes on ticking while they are: ticks fall inside the parse (parsed on the loop,
    none could; counted, not timed, so a loaded machine only adds ticks)."""
    import threading

    from tot_mcp.kg_adapters.sparql import endpoint

    monkeypatch.setattr(endpoint, "MAX_JSON_ITEMS", 500_000)
    parses: list[tuple[threading.Thread, float, float]] = []
    real = endpoint._loads

    def timed_loads(body):
        started = time.perf_counter()
        try:
            return real(body)
        finally:
            parses.append((threading.current_thread(), started, time.perf_counter()))

    monkeypatch.setattr(endpoint, "_loads", timed_loads)
    with FaultServer() as server:
        server.default = Reply(body=bindings(100_000, width=40))
        kg = kg_at(server.url)
        ticks: list[float] = []
        done = asyncio.Event()

        async def tick() -> None:
            while not done.is_set():
                await asyncio.sleep(0.001)
                ticks.append(time.perf_counter())

        ticker = asyncio.create_task(tick())
        data = await kg.store.sparql.query("SELECT ?r WHERE { ?s ?r ?o }")
        done.set()
        await ticker
    assert len(data["results"]["bindings"]) == 100_000
    ((thread, started, ended),) = parses
    assert thread is not threading.main_thread()
    assert sum(started < t < ended for t in ticks) >= 2, (len(ticks), ended - started)


RSS_PROBE = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from sparql_fault_server import FaultServer, Reply
from test_parsed_size import bindings, kg_at
from tot_mcp.kg_adapters.sparql.endpoint import MAX_JSON_ITEMS as MAX_ITEMS
from tot_mcp.kg_adapters.errors import BackendError, KGError

def status_mb(field):
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(field + ":")) / 1024

# Linux >= 4.0: VmHWM back to the current RSS, so building the body does not count
def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

# one binding whose value is n_mb MB of a 4-byte character: 4 bytes a character parsed too; or of
# ASCII with one such character, which makes Python hold every character in 4 bytes
def astral(n_mb, ascii=False):
    value = (b"a" * (n_mb << 20) + "\U0001F600".encode() if ascii
             else "\U0001F600".encode() * (n_mb << 18))
    return (b'{"head":{"vars":["r"]},"results":{"bindings":[{"r":{"type":"literal","value":"'
            + value + b'"}}]}}')

body = {"big": lambda: bindings(180_000, width=240),  # ~51 MB: over the byte cap
        # the most small bindings under the item cap
        "items": lambda: bindings(MAX_ITEMS // 4 - 100),
        "astral": lambda: astral(15),  # a string just under the byte cap
        "one-emoji": lambda: astral(15, ascii=True),
        # the emoji as a JSON escape: no 4-byte UTF-8 on the wire, 4 bytes a character once parsed
        # all the same
        "escaped": lambda: astral(15, ascii=True).replace("\U0001F600".encode(), b"\\ud83d\\ude00")
        }[sys.argv[3]]()
with FaultServer() as server:
    server.default = Reply(body=body)
    async def main(n):
        kg = kg_at(server.url)
        reset_peak()
        before = status_mb("VmRSS")
        calls = (kg.get_relations(["h:~aHR0cDovL2V4YW1wbGUub3JnL2E"]) for _ in range(n))
        out = await asyncio.gather(*calls, return_exceptions=True)
        peak = status_mb("VmHWM")
        if sys.argv[3] == "big":
            assert all(isinstance(o, BackendError) for o in out), out
        assert not any(
            isinstance(o, BaseException) and not isinstance(o, KGError) for o in out
        ), out
        return peak - before
    print(json.dumps({"size_mb": len(body) / 2**20, "one": asyncio.run(main(int(sys.argv[2])))}))
"""


@pytest.mark.parametrize(
    ("kind", "calls", "bound"),
    [
        ("big", 1, 200),
        ("big", 4, 400),
        ("items", 1, 200),
        ("astral", 1, 200),
        ("one-emoji", 1, 200),
        ("one-emoji", 4, 200),
        ("escaped", 4, 200),
    ],
)
def test_rss_grows_by_at_most_200_mb_on_an_answer_under_or_over_the_caps(kind, calls, bound):
    """Measured in a child process: the peak RSS during the calls over the RSS before them. A 51 MB
    answer is cut at the byte cap, four at once too (#36: +695 MB for one, +1.6 GB for four); the
    largest answers under the caps — small bindings up to the item cap, a string of 4-byte
    characters, or of ASCII with one, up to the byte cap (counted 4 bytes a byte once such a
    character shows) — parse to less than 200 MB (outside re-runs: +298 MB, +635 MB and, four at
    once, +731 MB under earlier caps)."""
    import json

    out = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(TESTS), str(calls), kind],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["size_mb"] > (48 if kind == "big" else 3)
    assert got["one"] < bound, got
