"""Evaluate the offline reasoner on the dev samples in ../shared/benchmarks (MetaQA 1/2/3-hop,
PathQuestion).

    python bench/offline_eval.py                      # every set, all 300 questions each
    python bench/offline_eval.py --limit 100 --sets mqa1 pq2
    # also print the first 20 misses with the chosen path
    python bench/offline_eval.py --errors 20 --sets mqa3

Each KB is loaded once; latency is per question (entity linking + reasoning) with model and KB
loaded. Topic entities come from ``initialize``; PathQuestion's topic (the gold path's first field,
which appears verbatim in the question) is marked ``[...]`` first, as the benchmark runner does.
Gold answers are compared by normalised label. Use ``--policy`` to run the full OfflinePolicy
through the tree-search driver instead of the bare core.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.datasets import BENCHMARKS, DEV_SETS, load_sets  # noqa: E402
from tot_mcp.kg_adapters.memory import MemoryKG  # noqa: E402
from tot_mcp.strategies.embeddings import Embedder  # noqa: E402
from tot_mcp.strategies.methods import BenchmarkQuestion  # noqa: E402
from tot_mcp.strategies.offline import OfflineReasoner, OfflineSettings, topics_from_matches  # noqa: E402

TARGET = {
    "mqa1": 0.90,
    "mqa2": 0.80,
    "mqa3": 0.70,
    "pq2": 0.70,
    "pq3": 0.70,
    "pql2": 0.70,
    "pql3": 0.70,
}


def norm(label: str) -> str:
    return " ".join(label.replace("_", " ").casefold().split())


async def run_set(
    name: str,
    kg: MemoryKG,
    questions: list[BenchmarkQuestion],
    reasoner: OfflineReasoner,
    errors: int,
    policy: bool = False,
    shared: dict | None = None,
) -> dict:
    qs = [(q.text, q.answers) for q in questions]
    hits, f1s, lat, shown = 0, [], [], 0
    calib: list[tuple[float, float, float, bool]] = []
    per_question: list[dict] = []
    lengths: Counter = Counter()
    for q, gold in qs:
        t0 = time.perf_counter()
        if policy:
            from tot_mcp.strategies.offline import OfflinePolicy
            from tot_mcp.strategies.tot.asm import TraversalASM
            from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

            pol = OfflinePolicy(
                [kg], embedder=reasoner.embedder, settings=reasoner.settings, shared=shared
            )
            result = await TreeSearch(TraversalASM([kg]), pol, SearchConfig()).run(q)
            lat.append(time.perf_counter() - t0)
            res = (await pol.plans(result.nodes[0].state)) and pol._reasoning[
                next(iter(pol._reasoning))
            ]
            pred_labels = result.answer.labels
        else:
            topics = topics_from_matches(await kg.initialize(q))
            res = await reasoner.reason(kg, q, topics)
            lat.append(time.perf_counter() - t0)
            pred_labels = res.best.answer_labels if res.best else []
        gold_n = {norm(g) for g in gold}
        best = res.best if res else None
        pred = [norm(a) for a in pred_labels]
        hit = bool(pred) and pred[0] in gold_n
        hits += hit
        ps = set(pred)
        tp = len(ps & gold_n)
        f1s.append(0.0 if not tp else 2 * tp / (len(ps) + len(gold_n)))
        per_question.append(
            {
                "set": name,
                "question": q,
                "hit": hit,
                "path": [
                    f"{r.split(':', 1)[1]}{'' if d.value == 'forward' else '^-1'}"
                    for r, d in best.hops
                ]
                if best
                else [],
                "score": round(best.score, 4) if best else None,
            }
        )
        if best:
            lengths[len(best.hops)] += 1
            rival = next(
                (p.score for p in res.plans[1:] if p.answers[:1] != best.answers[:1]), None
            )
            calib.append(
                (best.score, best.score - rival if rival is not None else 1.0, best.confidence, hit)
            )
        if not hit and shown < errors:
            shown += 1
            path = (
                " → ".join(
                    f"{r.split(':', 1)[1]}{'' if d.value == 'forward' else '⁻¹'}"
                    for r, d in best.hops
                )
                if best
                else "-"
            )
            alts = "; ".join(
                " → ".join(
                    r.split(":", 1)[1] + ("" if d.value == "forward" else "⁻¹") for r, d in p.hops
                )
                + f" {p.score:.2f}"
                for p in res.plans[1:4]
            )
            print(
                f"  MISS {q}\n       gold={gold[:3]}\n       got {path} "
                f"{best.score if best else 0:.2f} {pred[:3]}\n       alts: {alts}"
            )
    n = len(qs)
    return {
        "set": name,
        "n": n,
        "hits1": hits / n if n else 0.0,
        "f1": sum(f1s) / n if n else 0.0,
        "median_ms": 1000 * statistics.median(lat) if lat else 0.0,
        "p90_ms": 1000 * sorted(lat)[int(0.9 * (len(lat) - 1))] if lat else 0.0,
        "hops": dict(sorted(lengths.items())),
        "calib": calib,
        "per_question": per_question,
    }


async def main_async(args: argparse.Namespace) -> int:
    if not BENCHMARKS.is_dir():
        print(f"benchmarks not found at {BENCHMARKS}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    embedder = Embedder()
    overrides = dict(kv.split("=", 1) for kv in args.set or [])
    settings = OfflineSettings(**{k: _value(v) for k, v in overrides.items()})
    reasoner = OfflineReasoner(embedder, settings)
    print(f"embedder loaded in {time.perf_counter() - t0:.1f}s; settings {settings.model_dump()}")
    shared: dict = {}  # --policy: one reasoner (and its KG statistics) for every question's policy
    rows = []
    for name, kg, questions in load_sets(BENCHMARKS, args.sets, args.limit):
        rows.append(await run_set(name, kg, questions, reasoner, args.errors, args.policy, shared))
        r = rows[-1]
        print(
            f"{name:5s} n={r['n']:3d} hits@1={r['hits1']:.3f} f1={r['f1']:.3f} "
            f"median={r['median_ms']:.0f}ms p90={r['p90_ms']:.0f}ms hops={r['hops']}",
            flush=True,
        )
    if args.calibration:
        rows_c = [c for r in rows for c in r["calib"]]
        print("\nconfidence bin | questions | fraction correct")
        for lo in (0.0, 0.2, 0.4, 0.6, 0.8, 0.9):
            hi = {0.8: 0.9, 0.9: 1.01}.get(lo, lo + 0.2)
            b = [c for c in rows_c if lo <= c[2] < hi]
            print(
                f"[{lo:.1f}, {min(hi, 1.0):.1f}) | {len(b)} | "
                f"{sum(c[3] for c in b) / len(b) if b else float('nan'):.3f}"
            )
        if args.calibration_out:
            Path(args.calibration_out).write_text(
                "\n".join(f"{a:.4f}\t{m:.4f}\t{c:.4f}\t{int(h)}" for a, m, c, h in rows_c)
            )
    if args.per_question:
        with open(args.per_question, "w", encoding="utf-8") as f:
            for r in rows:
                f.writelines(json.dumps(x) + "\n" for x in r["per_question"])
    print(
        "\n| set | n | Hits@1 | target | F1 | median latency | p90 latency "
        "|\n|---|---|---|---|---|---|---|"
    )
    for r in rows:
        print(
            f"| {r['set']} | {r['n']} | {r['hits1']:.3f} | {TARGET[r['set']]:.2f} | {r['f1']:.3f} "
            f"| {r['median_ms']:.0f} ms | {r['p90_ms']:.0f} ms |"
        )
    return 0


def _value(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sets", nargs="+", default=list(DEV_SETS), choices=list(DEV_SETS))
    ap.add_argument("--limit", type=int, default=None, help="first N questions per set")
    ap.add_argument("--errors", type=int, default=0, help="print this many misses per set")
    ap.add_argument(
        "--policy",
        action="store_true",
        help="run OfflinePolicy through the tree search (k=3, τ=0.8)",
    )
    ap.add_argument(
        "--calibration", action="store_true", help="print fraction correct per confidence bin"
    )
    ap.add_argument(
        "--calibration-out", default=None, help="write score, margin, confidence, hit per question"
    )
    ap.add_argument(
        "--per-question",
        default=None,
        help="write one JSON line per question (set, question, hit, "
        "chosen path), e.g. to diff two settings",
    )
    ap.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="override an OfflineSettings field"
    )
    return asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
