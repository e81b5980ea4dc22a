"""How the on-disk store backend behaves at millions of triples: load, disk, memory, latency, hubs,
caching.

    python -m bench.scale --triples 1000000            # ~1 min on 2 cores
    python -m bench.scale --triples 10000000           # ~5 min; heavy: run once

Generates (or reuses) N synthetic triples (:mod:`bench.synthetic_kg`), loads them with ``tot-mcp
load`` in a child process (so its peak RSS is measured on its own), opens the store as a KG and
times the Tree-of-Traversals calls in-process and over MCP stdio (the SDK client against ``python -m
server.cli``). Prints a markdown table and, last, ``get_edges_p50_us: X``.

Samples are drawn by seeking to random byte offsets of the triples file, so they are edge-weighted:
a sampled head is a typical subject (a film, a book, a person), "non-hub" in the sense of the
targets. The hub is the most popular genre, which has ~3% of all edges pointing at it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KG = "syn"


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def fmt_ms(values: list[float]) -> str:
    return f"{pct(values, 0.5) * 1e3:.3f} / {pct(values, 0.99) * 1e3:.3f}"


def du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def sample_lines(path: Path, n: int, seed: int) -> list[tuple[str, str, str]]:
    """``n`` triples from random byte offsets (the line after each offset): edge-weighted, no full
    read."""
    rng = random.Random(seed)
    size = path.stat().st_size
    out = []
    with open(path, "rb") as fh:
        while len(out) < n:
            fh.seek(rng.randrange(size))
            fh.readline()
            line = fh.readline() or (fh.seek(0) or fh.readline())
            h, r, t = line.decode("utf-8").rstrip("\n").split("|")
            out.append((h, r, t))
    return out


async def timed(
    n: int, make: Callable[[int], Awaitable[object]]
) -> tuple[list[float], list[object]]:
    times, results = [], []
    for i in range(n):
        t0 = time.perf_counter()
        results.append(await make(i))
        times.append(time.perf_counter() - t0)
    return times, results


def ensure_triples(workdir: Path, n: int, seed: int, fresh: bool) -> tuple[Path, float | None]:
    from bench.synthetic_kg import write_triples

    path = workdir / f"synthetic-{n}-s{seed}.txt"
    if path.is_file() and not fresh:
        return path, None
    t0 = time.perf_counter()
    write_triples(path, n, seed, progress=True)
    return path, time.perf_counter() - t0


def ensure_store(workdir: Path, triples: Path, fresh: bool, chunk_lines: int) -> tuple[Path, dict]:
    from tot_mcp.kg_adapters.bulk_load import LoadState, state_path
    from tot_mcp.kg_adapters.fts_index import label_index_path

    store = workdir / (triples.stem + ".store")
    state = LoadState.read(state_path(store)) if state_path(store).is_file() else None
    done = state is not None and state.labels_built and all(f.done for f in state.files.values())
    if done and not fresh:
        return store, {"reused": True}
    if fresh:
        shutil.rmtree(store, ignore_errors=True)
        for p in (state_path(store), label_index_path(store)):
            p.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "tot_mcp.kg_adapters.bulk_load",
        str(triples),
        "--into",
        str(store),
        "--chunk-lines",
        str(chunk_lines),
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=str(REPO))
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"load failed with exit code {os.waitstatus_to_exitcode(status)}")
    return store, {"reused": False, "seconds": seconds, "peak_rss": usage.ru_maxrss * 1024}


async def in_process(
    store: Path, samples: list[tuple[str, str, str]], hub: str, rows: list
) -> dict:
    from tot_mcp.kg_adapters.cache import ResultCache
    from tot_mcp.kg_adapters.graph import Graph
    from tot_mcp.kg_adapters.oxigraph_store import name_iri, open_store_kg

    kg = open_store_kg(KG, store)

    def eid(name: str) -> str:
        return kg.term_id(__import__("pyoxigraph").NamedNode(name_iri(name)))

    heads = [eid(h) for h, _, _ in samples]
    rels = [f"{KG}:{r}" for _, r, _ in samples]
    tails = [eid(t) for _, _, t in samples]
    n = len(samples)

    t_rel, rel_results = await timed(n, lambda i: kg.get_relations([heads[i]]))
    t_fwd, fwd = await timed(n, lambda i: kg.get_edges([heads[i]], rels[i]))
    t_bwd, bwd = await timed(n, lambda i: kg.get_edges([tails[i]], rels[i], "backward"))
    assert all(p.edges for p in fwd) and all(p.edges for p in bwd), "a sampled edge was not found"
    assert all(len(p.edges) <= kg.limits.max_edges for p in fwd + bwd)
    head_labels = [h for h, _, _ in samples]
    t_search, found = await timed(n, lambda i: kg.search_entities(head_labels[i], 5))
    exact_first = (
        sum(1 for i, m in enumerate(found) if m and m[0].entity.label == head_labels[i]) / n
    )
    t_prefix, _ = await timed(
        n, lambda i: kg.search_entities(head_labels[i][: max(3, len(head_labels[i]) * 2 // 3)], 5)
    )
    t_link, _ = await timed(n, lambda i: kg.initialize(f"who is connected to {head_labels[i]}?", 5))

    hub_id = eid(hub)
    t0 = time.perf_counter()
    hub_page = await kg.get_edges([hub_id], f"{KG}:has_genre", "backward")
    t_hub_edges = time.perf_counter() - t0
    t0 = time.perf_counter()
    hub_rels = await kg.get_relations([hub_id])
    t_hub_rels = time.perf_counter() - t0
    hub_total = sum(r.count or 0 for r in hub_rels.relations)

    # cache: a tree-search-like workload where popular questions repeat (Zipf over the sampled
    # heads)
    cached = Graph(open_store_kg(KG, store), ResultCache())
    rng = random.Random(1)
    weights = [1 / (k + 1) for k in range(n)]
    t_cached = []
    for _ in range(n * 4):
        i = rng.choices(range(n), weights)[0]
        await cached.get_relations([heads[i]])
        t0 = time.perf_counter()
        await cached.get_edges([heads[i]], rels[i])
        t_cached.append(time.perf_counter() - t0)
    stats = cached.cache.stats()

    rows += [
        ("get_relations p50 / p99 (ms), in-process", fmt_ms(t_rel)),
        ("get_edges forward p50 / p99 (ms), in-process", fmt_ms(t_fwd)),
        ("get_edges backward, edge-sampled tails (incl. hubs) p50 / p99 (ms)", fmt_ms(t_bwd)),
        (
            "search_entities exact p50 / p99 (ms)",
            f"{fmt_ms(t_search)} (exact label first: {exact_first:.0%})",
        ),
        ("search_entities prefix p50 / p99 (ms)", fmt_ms(t_prefix)),
        ("initialize (n-gram linking) p50 / p99 (ms)", fmt_ms(t_link)),
        (
            f"hub get_edges ({hub!r}, {hub_total:,} edges) (ms)",
            f"{t_hub_edges * 1e3:.1f}: {len(hub_page.edges)} edges, "
            f"truncated={hub_page.truncated}, next_offset={hub_page.next_offset}",
        ),
        ("hub get_relations (counts every edge) (ms)", f"{t_hub_rels * 1e3:.1f}"),
        (
            "cache hit rate (Zipf-repeated workload)",
            f"{stats.hit_rate:.0%} ({stats.hits:,} hits / {stats.misses:,} misses)",
        ),
        ("get_edges through the cache p50 / p99 (ms)", fmt_ms(t_cached)),
    ]
    return {
        "get_edges_p50": pct(t_fwd, 0.5),
        "heads": heads,
        "rels": rels,
        "fwd": fwd,
        "rel_results": rel_results,
    }


async def over_mcp(store: Path, heads: list[str], rels: list[str], rows: list) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tot_mcp.server.http_child import SERVER_CMD, server_env

    params = StdioServerParameters(
        command=SERVER_CMD[0],
        args=[*SERVER_CMD[1:], "--kg", f"{KG}=store:{store}"],
        env=server_env(),
        cwd=str(REPO),
    )
    n = len(heads)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                t0 = time.perf_counter()
                await session.initialize()
                startup = time.perf_counter() - t0
                t_rel, r1 = await timed(
                    n, lambda i: session.call_tool("get_relations", {"entity_ids": [heads[i]]})
                )
                t_edges, r2 = await timed(
                    n,
                    lambda i: session.call_tool(
                        "get_edges", {"entity_ids": [heads[i]], "relation_id": rels[i]}
                    ),
                )
    errors = sum(1 for r in r1 + r2 if r.is_error)
    rows += [
        ("MCP stdio get_relations p50 / p99 (ms)", fmt_ms(t_rel)),
        (
            "MCP stdio get_edges p50 / p99 (ms)",
            f"{fmt_ms(t_edges)} ({errors} errors; session init {startup:.2f} s)",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--triples", type=int, required=True, help="synthetic triples to generate and load"
    )
    ap.add_argument(
        "--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "tot-scale"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--samples", type=int, default=300, help="calls per measured operation")
    ap.add_argument("--chunk-lines", type=int, default=500_000)
    ap.add_argument("--fresh", action="store_true", help="regenerate and reload even if present")
    ap.add_argument("--no-mcp", action="store_true", help="skip the MCP stdio measurements")
    args = ap.parse_args(argv)
    if args.triples < 1000 or args.samples < 1:
        ap.error("--triples must be ≥ 1000 and --samples ≥ 1")
    args.workdir.mkdir(parents=True, exist_ok=True)
    from bench.synthetic_kg import TYPES

    triples, gen_s = ensure_triples(args.workdir, args.triples, args.seed, args.fresh)
    store, load = ensure_store(args.workdir, triples, args.fresh, args.chunk_lines)
    from tot_mcp.kg_adapters.fts_index import label_index_path

    rows: list[tuple[str, str]] = [
        ("triples", f"{args.triples:,}"),
        ("generate (s)", "reused file" if gen_s is None else f"{gen_s:.1f}"),
        (
            "load incl. label index (s)",
            "reused store" if load["reused"] else f"{load['seconds']:.1f}",
        ),
        ("load peak RSS (MiB)", "-" if load["reused"] else f"{load['peak_rss'] / 2**20:.0f}"),
        ("store on disk (MiB)", f"{du(store) / 2**20:.0f}"),
        ("label index on disk (MiB)", f"{du(label_index_path(store)) / 2**20:.0f}"),
    ]
    samples = sample_lines(triples, args.samples, args.seed)
    hub = TYPES["genre"].label(0)  # type: ignore[operator]
    res = asyncio.run(in_process(store, samples, hub, rows))
    rows.append(
        (
            "query process peak RSS (MiB)",
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}",
        )
    )
    if not args.no_mcp:
        asyncio.run(over_mcp(store, res["heads"], res["rels"], rows))
    print(f"\n| measure (N = {args.triples:,}, {args.samples} samples each) | value |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    print(f"\nget_edges_p50_us: {res['get_edges_p50'] * 1e6:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
