"""A query that ran out of time is stopped, not just abandoned (issue #25): a local store's query
process is killed at the deadline; our HTTP client closes the connection to an endpoint at the
deadline; ``oxigraph serve --timeout-s`` stops its own work and its cancelled answer reads as a
timeout. Real stores, a real ``oxigraph serve`` and a scripted loopback endpoint; the heavy query is
a cross product under an always-false FILTER, which finds no row for minutes."""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest
from oxigraph_fixture import start_oxigraph
from sparql_fault_server import FaultServer, Reply
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import BackendError, BackendTimeout
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg

HEAVY = 'SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i FILTER(STR(?a) = CONCAT(STR(?i), "x")) }'
#: reads the store all along (a closure under a path), so the engine's cancellation token is checked
HEAVY_READING = (
    "SELECT * WHERE { ?a (!<urn:x>)*/(!<urn:x>)* ?b . ?b (!<urn:x>)* ?c FILTER(STR(?a) = STR(?c) + "
    "1) }"
)


def write_triples(path: Path, n: int) -> Path:
    path.write_text(
        "".join(
            f"<http://e/{i}> <http://p/{i % 7}> <http://e/{(i * 13) % n}> .\n" for i in range(n)
        ),
        encoding="utf-8",
    )
    return path


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def assert_heavy_query_is_killed(kg) -> None:
    """``kg`` (a Graph) stops its query at the deadline: its backend's query process is killed."""
    started = time.monotonic()
    with pytest.raises(BackendTimeout, match=r"did not finish within 1 s \(stopped\)"):
        await kg.sparql_query(HEAVY, timeout=1.0)
    assert time.monotonic() - started < 3
    workers = kg.store._workers
    assert (
        workers.killed == 1 and workers.pids == []
    )  # the process that ran it is gone (killed, reaped)
    quick = await kg.sparql_query(
        "SELECT ?s WHERE { ?s <http://p/1> ?o } LIMIT 2"
    )  # a fresh process answers
    assert len(quick.rows) == 2
    await kg.aclose()
    assert workers.pids == []


async def test_an_on_disk_stores_query_process_is_killed_at_the_deadline(tmp_path):
    from tot_mcp.kg_adapters.oxigraph_store import load_into_store, open_store_kg

    load_into_store(write_triples(tmp_path / "d.nt", 2000), tmp_path / "store")
    kg = Graph(open_store_kg("s", tmp_path / "store"))
    await assert_heavy_query_is_killed(kg)
    rels = await kg.get_relations(["s:http://e/1"])  # the traversal tools never depended on it
    assert rels.relations


async def test_an_rdf_files_query_process_is_killed_at_the_deadline(tmp_path):
    from tot_mcp.kg_adapters.rdf_file import RdfFileKG, load_rdf_file

    path = write_triples(tmp_path / "d.nt", 2000)
    await assert_heavy_query_is_killed(Graph(RdfFileKG("f", load_rdf_file(path), source=path)))


async def test_an_in_memory_store_without_a_source_caps_its_runaway_threads(tmp_path):
    """A store the embedder built in memory has no file a process could open: its query runs in a
    thread that cannot be stopped, so while one still runs after its timeout, the next heavy query
    is refused in one line and the traversal tools keep answering."""
    import pyoxigraph as ox
    from tot_mcp.kg_adapters.oxigraph_store import OxigraphKG
    from tot_mcp.kg_adapters.sparql.run import ThreadRuns

    store = ox.Store()
    store.bulk_load(path=str(write_triples(tmp_path / "d.nt", 1000)), format=ox.RdfFormat.N_TRIPLES)
    backend = OxigraphKG("m", store)
    backend._thread_runs = ThreadRuns(limit=1)
    kg = Graph(backend)
    # ~1 s, then ends
    two = 'SELECT * WHERE { ?a ?b ?c . ?d ?e ?f FILTER(STR(?a) = CONCAT(STR(?f), "x")) }'
    with pytest.raises(BackendTimeout):
        await kg.sparql_query(two, timeout=0.1)
    with pytest.raises(
        BackendError, match="1 earlier SPARQL queries are still running on it"
    ) as refused:
        await kg.sparql_query(two, timeout=0.1)
    assert "\n" not in str(refused.value)
    assert (await kg.get_relations(["m:http://e/1"])).relations
    deadline = time.monotonic() + 8
    while backend._thread_runs.running and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert backend._thread_runs.running == 0  # the cap is given back when the engine finishes
    assert (await kg.sparql_query("ASK { ?s ?p ?o }")).boolean is True


async def test_our_client_closes_the_connection_when_the_time_runs_out():
    """The endpoint sees the connection closed at the deadline, in both lanes; a configured timeout
    parameter tells it the deadline up front."""
    with FaultServer() as server:
        server.default = Reply(hold=True)
        kg = Graph(
            open_sparql_kg(
                "wd",
                "wikidata",
                server.url,
                registry=EndpointRegistry(),
                retries=0,
                timeout=0.5,
                label_search="exact",
                search_api="none",
                timeout_param="timeout:ms",
            )
        )
        for call in (
            kg.sparql_query("SELECT ?s WHERE { ?s ?p ?o }", timeout=0.5),
            kg.search_entities("Adams"),
        ):
            started = time.monotonic()
            with pytest.raises(BackendTimeout):
                await call
            deadline = time.monotonic() + 2
            while len(server.disconnects) < len(server.seen) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            assert len(server.disconnects) == len(server.seen)
            assert server.disconnects[-1] - started < 1.0
        assert [s.params["timeout"] for s in server.seen] == ["500", "500"]
        await kg.aclose()


def test_a_bad_timeout_param_is_refused_at_open():
    from tot_mcp.kg_adapters.errors import InvalidInput

    for bad in ("query", "time out", "timeout:minutes"):
        with pytest.raises(InvalidInput, match="timeout_param"):
            open_sparql_kg("x", "sparql", "http://127.0.0.1:9/sparql", timeout_param=bad)


async def test_oxigraph_serve_with_timeout_s_stops_a_store_reading_query_and_says_so(tmp_path):
    """Measured: closing the connection does not stop ``oxigraph serve``; ``--timeout-s`` does, for
    a query that keeps reading the store. Its answer (a 200 whose body ends in the cancellation
    message) is a timeout."""
    proc, url = start_oxigraph(
        write_triples(tmp_path / "d.nt", 2000), tmp_path / "store", ["--timeout-s", "1"]
    )
    with proc:
        try:
            kg = Graph(
                open_sparql_kg(
                    "g", "sparql", url, registry=EndpointRegistry(), retries=0, timeout=8
                )
            )
            started = time.monotonic()
            with pytest.raises(
                BackendTimeout, match=re.escape(url) + ": the query exceeded the endpoint's own"
            ):
                await kg.sparql_query(HEAVY_READING, timeout=8)
            assert time.monotonic() - started < 4
            before = cpu_seconds(proc.pid)
            await asyncio.sleep(0.5)
            assert cpu_seconds(proc.pid) - before < 0.1  # the engine stopped
            await kg.aclose()
        finally:
            proc.terminate()
            proc.wait(timeout=5)
