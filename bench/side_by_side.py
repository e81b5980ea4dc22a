"""Side-by-side table of every ``tot-search --method`` on the MetaQA and PathQuestion dev samples, run through the
same runner ``tot-search --questions`` uses (``strategies.benchmarks.runner.run_questions``), so the numbers are the
CLI's: Hits@1, Recall@10 (retrievers only), median latency, LLM calls. Offline policy and judges by default.

One JSONL per set × method lands in ``--out`` (resumable: finished questions are skipped on a rerun), and the
table is printed from every JSONL found there, so methods can be run in separate invocations:

    python bench/side_by_side.py --limit 100                               # every method, every set
    python bench/side_by_side.py --methods beam --sets mqa1 --limit 100
    python bench/side_by_side.py --table-only                              # just print the table

Each set's KB is opened as ``tot-search --kg NAME=FILE`` would (MetaQA as ``metaqa=.../kb.txt``), one
``Services`` (one MiniLM) per KB shared by the methods; retrieval indexes come from the on-disk cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.datasets import BENCHMARKS, by_benchmark_name  # noqa: E402
from kg_adapters.spec import make_spec, open_kg  # noqa: E402
from strategies.benchmarks.formats import BadLine, read_questions  # noqa: E402
from strategies.benchmarks.runner import RunRecord, load_done, run_questions, summarize  # noqa: E402
from strategies.methods import MethodOptions, Services, available_methods, get_method_factory  # noqa: E402

# set → (question file, format, KG name, KB file), paths relative to the benchmark directory
SETS = {name: (d.questions, d.fmt, d.kg_name, d.kb) for name, d in by_benchmark_name().items()}
METHODS = ["tot", "chain", "ark", "router", "beam", "rerank", "bfs", "dfs"]


def table(out: Path, sets: list[str], methods: list[str], limit: int) -> str:
    lines = ["| set | method | n | Hits@1 | Recall@10 | median latency s | LLM calls | errors |",
             "|---|---|---|---|---|---|---|---|"]
    for s in sets:
        for m in methods:
            path = out / f"{s}-{m}.jsonl"
            if not path.is_file():
                continue
            recs = load_done(path)[:limit]
            if not recs:
                continue
            summ = summarize(recs)
            rec = "—" if summ.recall10 is None else f"{summ.recall10:.3f}"
            lines.append(f"| {s} | {m} | {summ.n} | {summ.hits1:.3f} | {rec} | {summ.median_latency_s:.3f} | "
                         f"{summ.llm_calls} | {summ.errors} |")
    return "\n".join(lines)


async def run(args) -> None:
    from strategies.embeddings import Embedder

    embedder = None
    by_kb: dict[str, list[str]] = {}
    for s in args.sets:
        by_kb.setdefault(SETS[s][3], []).append(s)
    for kb, set_names in by_kb.items():
        name = SETS[set_names[0]][2]
        t0 = time.perf_counter()
        kg = open_kg(make_spec(name, str(args.data / kb)))
        print(f"[{name}] opened in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        if embedder is None:
            embedder = Embedder()
        services = Services([kg], embedder_factory=lambda: embedder)
        for m in args.methods:
            extra = {"cache_dir": str(args.cache_dir)} if args.cache_dir else {}
            method = get_method_factory(m)(MethodOptions(llm=args.llm, extra=extra), services)
            for s in set_names:
                qfile, fmt = SETS[s][0], SETS[s][1]
                qs = [q for q in read_questions(args.data / qfile, fmt) if not isinstance(q, BadLine)][: args.limit]
                out = args.out / f"{s}-{m}.jsonl"
                done = {r.id for r in load_done(out)} if out.exists() else set()
                todo = [q for q in qs if q.id not in done]
                t0 = time.perf_counter()
                new = await run_questions(todo, method, m, [kg], out=out, workers=1, keep_trace=False)
                recs: list[RunRecord] = load_done(out)[: args.limit]
                summ = summarize(recs)
                print(f"{s:7s} {m:7s} n={summ.n} (+{len(new)} in {time.perf_counter() - t0:.0f}s) "
                      f"hits@1={summ.hits1:.3f} recall@10={summ.recall10} "
                      f"median={summ.median_latency_s:.3f}s llm={summ.llm_calls} errors={summ.errors}",
                      file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--methods", nargs="+", default=METHODS, choices=available_methods())
    p.add_argument("--limit", type=int, default=100, help="questions per set (the first N of each dev sample)")
    p.add_argument("--llm", default="offline")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "side_by_side")
    p.add_argument("--cache-dir", type=Path, default=None, help="retrieval index cache (default: user cache dir)")
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args(argv)
    if args.limit < 1:
        p.error("--limit must be ≥ 1")
    if not args.data.is_dir():
        print(f"side_by_side: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        asyncio.run(run(args))
    print(table(args.out, args.sets, args.methods, args.limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
