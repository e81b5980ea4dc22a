"""The same questions over one KB and over two linked KGs, side by side: what linking costs in
answers and time.

    python -m bench.linked_table                # linked-MetaQA dev 2-hop and 3-hop, offline policy
    python -m bench.linked_table --limit 50 --method chain
    # another split of the same shape (e.g. held-out questions)
    python -m bench.linked_table --data DIR

Per question, the method ``tot-search --method`` runs (``strategies.methods``) answers it twice in
this one process, one right after the other: over the MetaQA KB alone (the embedded KG: the same
triples) and over ``films.txt`` + ``catalog.ttl`` linked by label (the default, as ``tot-search --kg
films=… --kg catalog=…`` links them). Alternating keeps the latency ratio honest on a shared, noisy
machine; the KGs and the embedder are loaded before timing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

from bench.datasets import BENCHMARKS

LINKED = BENCHMARKS / "linked-metaqa"
SETS = {"2hop": "dev_2hop.txt", "3hop": "dev_3hop.txt"}


async def measure(
    data: Path, key: str, args: argparse.Namespace, single: list, linked: list, embedder
) -> dict:
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions
    from tot_mcp.strategies.benchmarks.runner import score
    from tot_mcp.strategies.methods import MethodOptions, make_method
    from tot_mcp.strategies.services import Services

    questions = [
        q for q in read_questions(data / SETS[key], "metaqa") if not isinstance(q, BadLine)
    ][: args.limit]
    runs = {}
    for name, kgs in (("single", single), ("linked", linked)):
        services = Services(kgs, embedder_factory=lambda: embedder)
        runs[name] = (make_method(args.method, MethodOptions(), services), kgs, services, [], [])
    for q in questions:
        for method, kgs, _, latencies, records in runs.values():
            result = await method(q.public(), kgs[0])
            latencies.append(result.latency_s)
            records.append(score(q, result, args.method))
    out = {"n": len(questions)}
    for name, (_, _, services, latencies, records) in runs.items():
        out[name] = {
            "hits1": statistics.fmean(r.hits1 for r in records),
            "f1": statistics.fmean(r.f1 for r in records),
            "median_ms": 1000 * statistics.median(latencies),
            "latencies": latencies,
        }
    out["links"] = runs["linked"][
        2
    ].graph.linker.stats()  # the LinkedKG tot-search builds for several --kg
    return out


async def run(args: argparse.Namespace) -> None:
    from tot_mcp.kg_adapters.spec import make_spec, open_kg
    from tot_mcp.strategies.embeddings import Embedder

    single = [open_kg(make_spec("movies", "embedded"))]
    linked = [
        open_kg(make_spec("films", str(args.data / "films.txt"))),
        open_kg(make_spec("catalog", str(args.data / "catalog.ttl"))),
    ]
    embedder = Embedder()
    print(f"method {args.method}, offline policy, paper defaults; {args.data}")
    print(
        "| set | n | Hits@1 single KB | Hits@1 linked | F1 single / linked | median latency single "
        "/ linked | ratio of medians | median per-question ratio | link cache hit rate (lookups, "
        "entries) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    kinds = []
    for key in args.sets:
        m = await measure(args.data, key, args, single, linked, embedder)
        s, li, links = m["single"], m["linked"], m["links"]
        per_q = statistics.median(b / a for a, b in zip(s["latencies"], li["latencies"]) if a > 0)
        print(
            f"| linked-MetaQA {key} | {m['n']} | {s['hits1']:.3f} | {li['hits1']:.3f} | "
            f"{s['f1']:.3f} / {li['f1']:.3f} | {s['median_ms']:.0f} / {li['median_ms']:.0f} ms | "
            f"{li['median_ms'] / s['median_ms']:.2f}× | {per_q:.2f}× | "
            f"{links.hit_rate:.3f} ({links.lookups:,}, {links.entries:,}) |",
            flush=True,
        )
        kinds.append(f"{key}: {links.label_links:,} made, {links.refused:,} refused (another kind)")
    print(f"\nlabel links: {'; '.join(kinds)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, default=LINKED, help="folder with films.txt, catalog.ttl, dev_*hop.txt"
    )
    ap.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    ap.add_argument("--method", default="tot")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args(argv)
    if not (args.data / "films.txt").is_file():
        print(
            f"bench.linked_table: {args.data}/films.txt not found (the benchmark data sits beside "
            "the repository)",
            file=sys.stderr,
        )
        return 2
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
