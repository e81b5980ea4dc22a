"""Round trips to a remote KG: requests and latency per question when the SPARQL KG is 50 ms away.

Why. A loopback endpoint answers in about a millisecond and hides how many requests a question
costs; a public endpoint (Wikidata: 100-300 ms a request) turns each into user-visible latency. This
benchmark puts ``../shared/tools/sparql_proxy.py`` (a fixed delay per request and one log line per
request) in front of the catalog endpoint of ``bench.linked3``'s three linked KGs and counts.

How. ``bench.linked3``'s data (films in memory, catalog behind ``oxigraph serve-read-only`` + the
proxy, cast in an on-disk store, identifier and label links) built as ``tot-mcp --config`` builds
it; the offline method answers MetaQA dev questions of the slices that touch the catalog, one at a
time, in one process, as a server answers them in turn (caches warm across questions, as they
would). Per question: the proxy's log lines (= catalog requests), the waves (the longest chain of
catalog requests each sent after the one before was answered: what latency follows), the wall
time and the process's CPU time (all its threads: when it nears the wall time, the question waits
on the process's own work, not on the endpoint). Then, on a freshly built system, one cold
``follow_path`` of three hops across the three KGs (an actor's films, their genres, the other films
of those genres).

    python -m bench.round_trips                      # 10 questions per hop count, 50 ms per request
    python -m bench.round_trips --limit 20 --delay 200
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.linked3 import KB, METAQA, Endpoint, build, free_port, write_config, write_slices

PROXY = Path(__file__).resolve().parents[2] / "shared" / "tools" / "sparql_proxy.py"
SLICES = ("films→catalog", "cast→films→catalog")


class Chain:
    """A SPARQL KG's requests as this process sends them, each a (sent, answered) span, each held
    ``hold`` seconds first if given (a remote endpoint's delay, in process): :meth:`waves` is the
    longest chain of requests each sent after the one before was answered — the round trips a
    caller waits through one after another, which its latency follows."""

    def __init__(self, kg, hold: float = 0.0) -> None:
        self.spans: list[tuple[float, float]] = []
        endpoint = kg.store.sparql
        real = endpoint.request

        async def timed(*args, **kwargs):
            sent = time.perf_counter()
            try:
                if hold:
                    await asyncio.sleep(hold)
                return await real(*args, **kwargs)
            finally:
                self.spans.append((sent, time.perf_counter()))

        endpoint.request = timed

    def waves(self, since: int = 0) -> int:
        chain: list[tuple[float, int]] = []  # (answered, longest chain ending there)
        for sent, answered in sorted(self.spans[since:], key=lambda s: s[1]):
            chain.append((answered, 1 + max((n for a, n in chain if a <= sent), default=0)))
        return max((n for _, n in chain), default=0)


class Proxy:
    """``sparql_proxy.py`` on a free loopback port in front of ``upstream``; ``count()`` reads its
    log."""

    def __init__(self, upstream: str, delay_ms: float, log: Path) -> None:
        self.port, self.log = free_port(), log
        self.url = f"http://127.0.0.1:{self.port}/query"
        log.write_text("")
        self.proc = subprocess.Popen(
            [sys.executable, str(PROXY), str(self.port), upstream, str(delay_ms), str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)

    def count(self) -> int:
        return sum(1 for _ in self.log.open())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


async def _system(config: Path):
    from tot_mcp.strategies.settings import load_config
    from tot_mcp.strategies.embeddings import Embedder
    from tot_mcp.strategies.system import build_system, freeze_loaded_objects

    embedder = Embedder()
    system = build_system(
        config=load_config(config), embedder_factory=lambda: embedder, wait_for_builds=True
    )
    freeze_loaded_objects()  # as tot-mcp and tot-search do once built: no full collection of it
    return system


async def questions(args, data, proxy: Proxy) -> list[str]:
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions
    from tot_mcp.strategies.benchmarks.runner import run_questions
    from tot_mcp.strategies.methods import MethodOptions, make_method

    system = await _system(data.config)
    method = make_method(args.method, MethodOptions(llm="offline"), system.services)
    kgs = list(system.kgs.values())
    chain = Chain(system.kgs["catalog"])
    lines = []
    warmed = False
    for hops in args.hops:
        qs, spare = [], []
        for name, path in write_slices(args.metaqa, hops, data.work / "questions").items():
            if name in SLICES:
                got = [q for q in read_questions(path, "metaqa") if not isinstance(q, BadLine)]
                qs.extend(got[args.skip : args.skip + args.limit])
                spare.extend(got[args.skip + args.limit : args.skip + args.limit + 1])
        if not warmed and qs:  # indexes, statistics and first connections, untimed: a question
            # that is not timed after (one timed twice is answered from the caches the second time)
            await run_questions([(spare or qs)[-1]], method, args.method, kgs)
            warmed = True
        requests, waves, seconds, cpu, hits = [], [], [], [], []
        for q in qs:
            before, since, t0 = proxy.count(), len(chain.spans), time.perf_counter()
            c0 = time.process_time()
            (rec,) = await run_questions([q], method, args.method, kgs)
            seconds.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            requests.append(proxy.count() - before)
            waves.append(chain.waves(since))
            hits.append(rec.hits1)
        lines.append(
            f"| {hops}-hop questions ({len(qs)}) | {statistics.median(requests):g} | "
            f"{max(requests)} | {statistics.median(waves):g} | {statistics.median(seconds):.2f} | "
            f"{statistics.median(cpu):.2f} | {statistics.mean(hits):.3f} |"
        )
    await system.aclose()
    return lines


async def cold_follow(data, proxy: Proxy) -> str:
    from tot_mcp.kg_adapters.follow import Hop, follow_path
    from tot_mcp.kg_adapters.models import Direction

    system = await _system(data.config)
    graph = system.graph
    (actor,) = [m.entity.id for m in await graph.search_entities("Tom Hanks", 1)]
    genre = (await system.kgs["catalog"].search_relations("genre", 1))[0].id
    hops = [
        Hop(relation_id="cast:starred_actors", direction=Direction.backward),
        Hop(relation_id=genre, direction=Direction.forward),
        Hop(relation_id=genre, direction=Direction.backward),
    ]
    chain = Chain(system.kgs["catalog"])
    before, t0, c0 = proxy.count(), time.perf_counter(), time.process_time()
    res = await follow_path(graph, [actor], hops)
    took, n = time.perf_counter() - t0, proxy.count() - before
    cpu = time.process_time() - c0
    await system.aclose()
    return (
        f"| cold follow_path, 3 hops, 3 KGs (reached {res.reached}) | {n} | {n} | "
        f"{chain.waves()} | {took:.2f} | {cpu:.2f} | – |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.round_trips", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--work", type=Path, default=None, help="bench.linked3's work directory")
    ap.add_argument("--metaqa", type=Path, default=METAQA)
    ap.add_argument("--hops", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--limit", type=int, default=10, help="questions per hop count and slice")
    ap.add_argument("--skip", type=int, default=0)
    ap.add_argument(
        "--delay", type=float, default=50, help="milliseconds the proxy adds to each request"
    )
    ap.add_argument("--method", default="tot")
    args = ap.parse_args(argv)
    if not PROXY.exists():
        ap.exit(2, f"round_trips: {PROXY} not found (../shared/tools beside the repository)\n")
    import os

    work = (
        args.work
        or Path(os.environ.get("TOT_MCP_CACHE_DIR", Path.home() / ".cache" / "tot-mcp"))
        / "bench"
        / "linked3"
    )
    data = build(KB, work, log=lambda *_: None)
    with Endpoint(data.catalog_store) as endpoint:
        proxy = Proxy(endpoint.url, args.delay, work / "proxy-requests.log")
        try:
            write_config(data, proxy.url)
            rows = asyncio.run(questions(args, data, proxy))
            rows.append(asyncio.run(cold_follow(data, proxy)))
        finally:
            proxy.stop()
    print(
        f"method {args.method} (offline), catalog behind a {args.delay:g} ms proxy, "
        f"{time.strftime('%Y-%m-%d')}"
    )
    print(
        "| what | requests (median) | requests (max) | waves (median) | seconds (median) "
        "| CPU seconds (median) | Hits@1 |\n|---|---|---|---|---|---|---|"
    )
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
