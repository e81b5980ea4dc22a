"""Median latency of answer methods measured question by question, in rotating order, so every
method sees the same machine load (``side_by_side.py`` runs one method after another, which a shared
machine's drift can tilt).

Each method gets its own KG instance and services object (no method answers from another's caches);
each question is run by every method, the first method changing from question to question. Prints
one table: Hits@1 and median latency per method, and each method's median against the first's.

    python bench/interleaved_latency.py --methods router chain tot --sets mqa1 mqa2 mqa3 \
        --skip 100 --limit 100
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

from bench.datasets import BENCHMARKS, by_benchmark_name
from tot_mcp.kg_adapters.spec import make_spec, open_kg
from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions
from tot_mcp.strategies.benchmarks.runner import score
from tot_mcp.strategies.methods import MethodOptions, make_method
from tot_mcp.strategies.registry import available, get
from tot_mcp.strategies.services import Services


async def run(args) -> list[tuple[str, int, float, float]]:
    sets = by_benchmark_name()
    by_kb: dict[str, list[str]] = {}
    for s in args.sets:
        by_kb.setdefault(sets[s].kb, []).append(s)
    lat: dict[str, list[float]] = {m: [] for m in args.methods}
    hits: dict[str, list[float]] = {m: [] for m in args.methods}
    for kb, names in by_kb.items():
        kgs = {
            m: open_kg(make_spec(sets[names[0]].kg_name, str(args.data / kb))) for m in args.methods
        }
        runs = {}
        for m in args.methods:
            services = Services([kgs[m]], wait_for_builds=True)
            await services.resources(kgs[m], get(m).needs)
            runs[m] = make_method(m, MethodOptions(), services)
        questions = []
        for s in names:
            qs = [
                q
                for q in read_questions(args.data / sets[s].questions, sets[s].fmt)
                if not isinstance(q, BadLine)
            ]
            questions += qs[args.skip :][: args.limit]
        for i, q in enumerate(questions):
            k = i % len(args.methods)
            for m in args.methods[k:] + args.methods[:k]:
                t0 = time.perf_counter()
                result = await runs[m](q.public(), kgs[m])
                lat[m].append(time.perf_counter() - t0)
                hits[m].append(score(q, result, m).hits1)
    return [
        (m, len(lat[m]), statistics.fmean(hits[m]), statistics.median(lat[m])) for m in args.methods
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument(
        "--sets", nargs="+", default=["mqa1", "mqa2", "mqa3"], choices=list(by_benchmark_name())
    )
    p.add_argument("--methods", nargs="+", default=["router", "chain", "tot"], choices=available())
    p.add_argument(
        "--skip", type=int, default=0, help="leave out the first N questions of each set"
    )
    p.add_argument("--limit", type=int, default=100, help="questions per set (after --skip)")
    args = p.parse_args(argv)
    if args.limit < 1 or args.skip < 0:
        p.error("--limit must be ≥ 1 and --skip ≥ 0")
    if not args.data.is_dir():
        print(f"interleaved_latency: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    rows = asyncio.run(run(args))
    first = rows[0][3]
    print(
        f"sets: {', '.join(args.sets)} (questions {args.skip + 1}–{args.skip + args.limit} of "
        "each), methods interleaved per question\n"
    )
    print(f"| method | n | Hits@1 | median latency ms | vs {rows[0][0]} |\n|---|---|---|---|---|")
    for m, n, h, t in rows:
        print(f"| {m} | {n} | {h:.3f} | {1000 * t:.1f} | {t / first:.2f}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
