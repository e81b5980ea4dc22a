"""Latency of the Tree-of-Traversals calls on the MetaQA KB: in-process, against rdflib, and over
MCP stdio.

    python -m bench.kg_bench                   # ~1-2 min on 2 cores (rdflib loading is most of it)
    python -m bench.kg_bench --samples 2000 --mcp-calls 200 --no-rdflib

Reads ``../shared/benchmarks/metaqa/kb.txt`` (falling back to the copy shipped in the package),
loads it into the in-memory backend (the one ``tot-mcp --kg NAME=kb.txt`` uses), and times
``get_relations`` / ``get_edges`` on random entities with relations they really have (both
directions). The same lookups are then done with rdflib's ``Graph.triples()`` over the same triples
(IDs only, no labels, so rdflib is favoured), and finally the ``get_edges`` round trip through the
MCP SDK's stdio client against a real ``tot-mcp`` process. Prints a markdown table. Targets:
in-process get_edges p50 ≤ 50 µs and ≥ 10× faster than rdflib; MCP stdio p50 ≤ 3 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.datasets import BENCHMARKS

REPO = Path(__file__).resolve().parents[1]
SHARED_KB = BENCHMARKS / "metaqa" / "kb.txt"


@dataclass(frozen=True)
class Lookup:
    entity: int  # node index
    relation: int  # relation index
    forward: bool


def rss_mb() -> float:
    """Current resident set size (not the peak), from /proc."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def kb_path(arg: str | None) -> tuple[Path, str]:
    if arg:
        return Path(arg), arg
    if SHARED_KB.exists():
        return SHARED_KB, str(SHARED_KB)
    from importlib.resources import files

    return Path(
        str(files("tot_mcp.kg_adapters") / "data" / "metaqa_kb.txt.gz")
    ), "embedded copy (kg_adapters/data)"


def sample_lookups(index, n: int, rng: random.Random) -> list[Lookup]:
    """Random (entity, relation, direction) triples that have at least one edge: what a traversal
    really asks."""
    out: list[Lookup] = []
    n_nodes = len(index.nodes)
    while len(out) < n:
        i = rng.randrange(n_nodes)
        options = [(r, True) for r in index.out[i]] + [(r, False) for r in index.inc[i]]
        if options:
            r, fwd = rng.choice(options)
            out.append(Lookup(i, r, fwd))
    return out


async def time_in_process(
    kg, lookups: list[Lookup]
) -> tuple[list[float], list[float], list[float]]:
    """get_labelled_edges (what the get_edges tool reads: labels only), get_edges (each entity also
    gets the description derived from its edges, the first time it is returned) and get_relations,
    per lookup, in µs."""
    from tot_mcp.kg_adapters.models import Direction

    rel_ids = [f"{kg.name}:{local}" for local in kg.index.rel_local_ids]
    args = [
        (
            [kg.node_id(lk.entity)],
            rel_ids[lk.relation],
            Direction.forward if lk.forward else Direction.backward,
        )
        for lk in lookups
    ]
    warm = args[
        -200:
    ]  # warm up on lookups not timed, so each timed entity is built the first time, as in use
    args = args[:-200] if len(args) > 400 else args
    for a in warm:
        await kg.get_labelled_edges(*a)
        await kg.get_edges(*a)
    t_labelled, t_edges, t_rel = [], [], []
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for (
            ids,
            rel,
            direction,
        ) in args:  # first: get_edges would leave every entity built, descriptions and all
            t0 = clock()
            await kg.get_labelled_edges(ids, rel, direction)
            t_labelled.append((clock() - t0) / 1e3)
        for ids, rel, direction in args:
            t0 = clock()
            await kg.get_edges(ids, rel, direction)
            t_edges.append((clock() - t0) / 1e3)
        for ids, _, _ in args:
            t0 = clock()
            await kg.get_relations(ids)
            t_rel.append((clock() - t0) / 1e3)
    finally:
        gc.enable()
    return t_labelled, t_edges, t_rel


def time_raw_index(index, lookups: list[Lookup]) -> list[float]:
    """The index lookup under get_edges alone (two dict hits and a copy of the neighbour list: what
    rdflib's ``triples()`` does too), without ID parsing, labels or result models."""
    times = []
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for lk in lookups:
            table = index.out if lk.forward else index.inc
            t0 = clock()
            list(table[lk.entity].get(lk.relation, ()))
            times.append((clock() - t0) / 1e3)
    finally:
        gc.enable()
    return times


def time_rdflib(index, lookups: list[Lookup]) -> tuple[float, float, list[float]]:
    """Load the same triples into an rdflib Graph and time ``Graph.triples()`` for the same
    lookups."""
    import rdflib

    before = rss_mb()
    t0 = time.perf_counter()
    g = rdflib.Graph()
    nodes = [rdflib.URIRef(f"urn:metaqa:e{i}") for i in range(len(index.nodes))]
    rels = [rdflib.URIRef(f"urn:metaqa:r:{k}") for k in index.rel_keys]
    add = g.add
    for s, by_rel in enumerate(index.out):
        for r, objs in by_rel.items():
            for o in objs:
                add((nodes[s], rels[r], nodes[o]))
    load = time.perf_counter() - t0
    mem = rss_mb() - before
    times = []
    clock = time.perf_counter_ns
    gc.disable()
    try:
        for lk in lookups:
            pattern = (
                (nodes[lk.entity], rels[lk.relation], None)
                if lk.forward
                else (None, rels[lk.relation], nodes[lk.entity])
            )
            t0 = clock()
            list(g.triples(pattern))
            times.append((clock() - t0) / 1e3)
    finally:
        gc.enable()
    return load, mem, times


async def time_mcp_stdio(
    kb: Path, kg_name: str, calls: list[tuple[str, str, str]]
) -> tuple[float, list[float], list[float]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tot_mcp.server.http_child import SERVER_CMD, server_env

    params = StdioServerParameters(
        command=SERVER_CMD[0],
        args=[*SERVER_CMD[1:], "--kg", f"{kg_name}={kb}"],
        env=server_env(),
        cwd=str(REPO),
    )
    times: list[float] = []
    pings: list[float] = []
    with tempfile.TemporaryFile("w+") as errlog:
        try:
            t0 = time.perf_counter()
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    startup = time.perf_counter() - t0
                    for entity, rel, direction in calls[:50]:  # warm up
                        await session.call_tool(
                            "get_edges",
                            {"entity_ids": [entity], "relation_id": rel, "direction": direction},
                        )
                    for entity, rel, direction in calls:
                        t = time.perf_counter()
                        result = await session.call_tool(
                            "get_edges",
                            {"entity_ids": [entity], "relation_id": rel, "direction": direction},
                        )
                        times.append((time.perf_counter() - t) * 1e3)
                        if result.is_error:
                            raise RuntimeError(f"get_edges failed over MCP: {result.content}")
                    for _ in range(
                        len(calls)
                    ):  # the protocol's floor: SDK client + pipes + SDK server, no tool
                        t = time.perf_counter()
                        await session.send_ping()
                        pings.append((time.perf_counter() - t) * 1e3)
        except BaseException:
            errlog.seek(0)
            print("tot-mcp stderr:\n" + errlog.read()[-3000:], file=sys.stderr)
            raise
    return startup, times, pings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.kg_bench", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--kb", help=f"triples file (default {SHARED_KB}, else the embedded copy)")
    ap.add_argument(
        "--samples", type=int, default=5000, help="random lookups timed in-process and in rdflib"
    )
    ap.add_argument(
        "--mcp-calls", type=int, default=500, help="get_edges round trips over MCP stdio"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-rdflib", action="store_true")
    ap.add_argument("--no-mcp", action="store_true")
    args = ap.parse_args(argv)

    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triples_file import load_triples_file

    path, shown = kb_path(args.kb)
    gc.collect()
    rss0 = rss_mb()
    t0 = time.perf_counter()
    kg = MemoryKG("metaqa", load_triples_file(path))
    load_s = time.perf_counter() - t0
    rss_kg = rss_mb() - rss0
    rng = random.Random(args.seed)
    lookups = sample_lookups(kg.index, args.samples, rng)
    labelled_us, edges_us, rel_us = asyncio.run(time_in_process(kg, lookups))
    raw_us = time_raw_index(kg.index, lookups)
    fanout = statistics.mean(
        len((kg.index.out if lk.forward else kg.index.inc)[lk.entity][lk.relation])
        for lk in lookups
    )

    rows = [
        (
            "KB",
            f"{shown}: {len(kg.index.nodes):,} entities, {kg.index.triples:,} triples, "
            f"{len(kg.index.rel_keys)} relations",
        ),
        ("load (parse + index + label index)", f"{load_s:.2f} s"),
        ("RSS of the loaded KG", f"{rss_kg:.0f} MB"),
        (
            "lookups",
            f"{len(lookups):,} random (entity, relation, direction) with ≥1 edge; mean "
            f"{fanout:.1f} edges",
        ),
        (
            "in-process get_relations p50 / p99",
            f"{pct(rel_us, 0.5):.1f} / {pct(rel_us, 0.99):.1f} µs",
        ),
        (
            "in-process get_labelled_edges p50 / p99",
            f"{pct(labelled_us, 0.5):.1f} / {pct(labelled_us, 0.99):.1f} µs "
            "(what the get_edges tool reads: labels, pydantic models)",
        ),
        (
            "in-process get_edges p50 / p99",
            f"{pct(edges_us, 0.5):.1f} / {pct(edges_us, 0.99):.1f} µs "
            "(also derives each entity's description, once)",
        ),
        (
            "in-process raw index lookup p50 / p99",
            f"{pct(raw_us, 0.5):.2f} / {pct(raw_us, 0.99):.2f} µs "
            "(TripleIndex only: IDs, no labels)",
        ),
    ]
    if not args.no_rdflib:
        rdf_load, rdf_mem, rdf_us = time_rdflib(kg.index, lookups)
        rows += [
            ("rdflib Graph load / RSS", f"{rdf_load:.2f} s / {rdf_mem:.0f} MB"),
            (
                "rdflib Graph.triples() p50 / p99",
                f"{pct(rdf_us, 0.5):.1f} / {pct(rdf_us, 0.99):.1f} µs (IDs only)",
            ),
            (
                "rdflib p50 / get_edges p50",
                f"{pct(rdf_us, 0.5) / pct(edges_us, 0.5):.2f}× (>1 means get_edges is faster)",
            ),
            (
                "rdflib p50 / raw index p50 (like for like: IDs only)",
                f"{pct(rdf_us, 0.5) / pct(raw_us, 0.5):.1f}×",
            ),
        ]
    if not args.no_mcp:
        rel_ids = [f"metaqa:{local}" for local in kg.index.rel_local_ids]
        calls = [
            (kg.node_id(lk.entity), rel_ids[lk.relation], "forward" if lk.forward else "backward")
            for lk in lookups[: args.mcp_calls]
        ]
        del (
            kg,
            lookups,
        )  # the client side should not pay for garbage-collecting this process's copy of the KB
        gc.collect()
        gc.freeze()
        startup, mcp_ms, ping_ms = asyncio.run(time_mcp_stdio(path, "metaqa", calls))
        rows += [
            ("MCP stdio: server start + initialize", f"{startup:.2f} s"),
            (
                "MCP stdio get_edges round trip p50 / p99",
                f"{pct(mcp_ms, 0.5):.2f} / {pct(mcp_ms, 0.99):.2f} ms ({len(mcp_ms)} calls)",
            ),
            ("MCP stdio ping round trip p50 (protocol floor)", f"{pct(ping_ms, 0.5):.2f} ms"),
        ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure'.ljust(width)} | value |\n|{'-' * (width + 2)}|-------|")
    for k, v in rows:
        print(f"| {k.ljust(width)} | {v} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
