"""Side-by-side benchmark of the composite retrieval strategies on the MetaQA and PathQuestion dev samples.

Offline only (no LLM: the offline ARK judge, the rule-based router analysis, bi-encoder deepening), so LLM calls
are 0 by construction. Per set and method: Hits@1, Recall@10, nDCG@10, MRR against the gold answers, and the
median per-question latency with the KB, model and indexes already loaded (index building is timed separately).
Latency caveat: MiniLM caches strings, so a method that embeds text another method already embedded for the same
question pays less; beam and exhaustive are timed on a precomputed query vector (search work only).

    python bench/strategies_bench.py --limit 100                       # every set, every method
    python bench/strategies_bench.py --sets PQ-2H mqa1 --methods ark bfs --limit 20

Data: ``../shared/benchmarks`` beside the repo (``--data`` to override).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.datasets import BENCHMARKS, by_benchmark_name, load_sets  # noqa: E402
from strategies.retrieval_common import RetrievalService, ranking_metrics  # noqa: E402

SETS = {name: (d.questions, d.kb, d.fmt, d.kg_name) for name, d in by_benchmark_name().items()}
METHODS = ["ark", "bfs", "dfs", "router", "beam", "exhaustive", "rerank"]


async def run_method(method: str, kg, res, text: str):
    from strategies.ark import ark_search, fixed_bfs, fixed_dfs
    from strategies.deep_graphrag import beam_search, exhaustive_search, hierarchy_for, topic_anchors
    from strategies.rerank import adaptive_rerank
    from strategies.router import route_query

    if method == "ark":
        return (await ark_search(kg, text, res)).results
    if method == "bfs":
        return (await fixed_bfs(kg, text, res, depth=2)).results
    if method == "dfs":
        return (await fixed_dfs(kg, text, res, depth=5)).results
    if method == "router":
        return (await route_query(kg, text, res)).results
    if method in ("beam", "exhaustive"):
        # the query vector is computed before the clock starts: the comparison is search work only
        q = res.service.embedder().encode_one(text)
        if method == "beam":  # anchored on the named entities, as the tool and tot-search do by default
            anchors = await topic_anchors(kg, res, text)
            return beam_search(kg, text, res, hierarchy_for(res, build=False), top_k=10, query_vec=q, anchors=anchors)
        return exhaustive_search(kg, text, res, top_k=10, query_vec=q)
    if method == "rerank":
        return (await adaptive_rerank(kg, text, res)).results
    raise ValueError(method)


async def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--cache-dir", type=Path, default=None, help="index cache (default: the user cache dir)")
    args = p.parse_args(argv)
    if not args.data.is_dir():
        print(f"strategies_bench: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    service = RetrievalService(cache_dir=args.cache_dir)
    rows = []
    for set_name, kg, questions in load_sets(args.data, args.sets, args.limit):
        res = service.resources(kg)
        t0 = time.perf_counter()
        res.bm25()
        res.relevance()
        if {"router", "beam", "exhaustive", "rerank"} & set(args.methods):
            res.dense(progress=True)
        if "rerank" in args.methods:
            res.static_dense()
        if "beam" in args.methods:
            from strategies.deep_graphrag import hierarchy_for

            h = hierarchy_for(res, progress=True)
            print(f"[{set_name}] hierarchy {h.levels}, built in {h.build_seconds}s (0 = loaded)", file=sys.stderr)
        print(f"[{set_name}] indexes ready in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        for method in args.methods:
            metrics: dict[str, list[float]] = {}
            latencies = []
            for q in questions:
                t = time.perf_counter()
                out = await run_method(method, kg, res, q.public().text)
                if isinstance(out, list):
                    latencies.append(time.perf_counter() - t)
                    results = out
                else:  # beam / exhaustive report their own search time
                    latencies.append(out.seconds)
                    results = out.results
                for k, v in ranking_metrics([r.label for r in results], q.answers, k=10).items():
                    metrics.setdefault(k, []).append(v)
            row = {k: statistics.fmean(v) for k, v in metrics.items()}
            row.update(set=set_name, method=method, n=len(questions), ms=1000 * statistics.median(latencies))
            rows.append(row)
            print(f"{set_name:7s} {method:10s} n={row['n']} hits@1={row['hits@1']:.3f} "
                  f"recall@10={row['recall@10']:.3f} ndcg@10={row['ndcg@10']:.3f} mrr={row['mrr']:.3f} "
                  f"median={row['ms']:.1f}ms", file=sys.stderr, flush=True)
    print("| set | method | n | Hits@1 | Recall@10 | nDCG@10 | MRR | median ms | LLM calls |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['set']} | {r['method']} | {r['n']} | {r['hits@1']:.3f} | {r['recall@10']:.3f} | "
              f"{r['ndcg@10']:.3f} | {r['mrr']:.3f} | {r['ms']:.1f} | 0 |")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
