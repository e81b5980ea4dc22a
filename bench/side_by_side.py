"""Side-by-side table of every registered strategy on the MetaQA and PathQuestion dev samples: each
method a row, each job's figure a column, run through the same runner ``tot-search --questions``
uses, so the numbers are the CLI's. Offline policy and judges by default.

* Hits@1 — the answer (every method; the job of tot, chain and the router);
* context recall / median context tokens — the share of gold answers named in the context a method
  returns for a client to read, and its size (characters / 4): ARK's job;
* Recall@10 — gold answers among the first 10 entities: the job of beam (and bfs/dfs);
* linking acc@1 — on the same questions with the brackets removed and one typo in the mention
  (:mod:`strategies.benchmarks.linking`, fixed seed): rerank's job, next to ``initialize`` (the KG's
  own linker).

One JSONL per set × method × task lands in ``--out`` (resumable), and the table is printed from
every JSONL found there, so methods can run in separate invocations:

    python bench/side_by_side.py --limit 100                            # every method, every set
    python bench/side_by_side.py --methods router tot chain --sets mqa1 mqa2 mqa3 PQ-2H --limit 100
    python bench/side_by_side.py --table-only
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
from tot_mcp.strategies.benchmarks.linking import linking_question
from tot_mcp.strategies.benchmarks.runner import RunRecord, load_done, run_questions
from tot_mcp.strategies.methods import MethodOptions, make_method
from tot_mcp.strategies.registry import available, get
from tot_mcp.strategies.services import Services

SETS = {name: (d.questions, d.fmt, d.kg_name, d.kb) for name, d in by_benchmark_name().items()}
LINKING = ("rerank", "initialize")  # methods also run on the linking task


def _tasks(method: str) -> list[str]:
    return ["answer", "linking"] if method in LINKING else ["answer"]


def _records(out: Path, sets: list[str], method: str, task: str, limit: int) -> list[RunRecord]:
    recs: list[RunRecord] = []
    for s in sets:
        path = out / f"{s}-{method}-{task}.jsonl"
        if path.is_file():
            recs += load_done(path)[:limit]
    return recs


def _mean(xs: list[float]) -> str:
    return f"{sum(xs) / len(xs):.3f}" if xs else "—"


def table(out: Path, sets: list[str], methods: list[str], limit: int) -> str:
    lines = [
        f"sets: {', '.join(sets)} (first {limit} questions each)",
        "",
        (
            "| method | n | Hits@1 | context recall | context tokens (median) | Recall@10 | "
            "linking acc@1 | median latency s | LLM calls |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in methods:
        recs = _records(out, sets, m, "answer", limit)
        if not recs:
            continue
        link = _records(out, sets, m, "linking", limit)
        ctx = [r for r in recs if r.context_recall is not None]
        rec10 = [r.recall10 for r in recs if r.recall10 is not None]
        lines.append(
            f"| {m} | {len(recs)} | {_mean([r.hits1 for r in recs])} | "
            f"{_mean([r.context_recall for r in ctx])} | "
            + (f"{statistics.median(r.context_tokens or 0 for r in ctx):.0f}" if ctx else "—")
            + f" | {_mean(rec10)} | {_mean([r.hits1 for r in link])} | "
            f"{statistics.median(r.latency_s for r in recs):.3f} | "
            f"{sum(r.llm_calls for r in recs)} |"
        )
    lines += [
        "",
        "Hits@1 per set:",
        "",
        "| method | " + " | ".join(sets) + " |",
        "|---|" + "---|" * len(sets),
    ]
    for m in methods:
        cells = []
        for s in sets:
            recs = _records(out, [s], m, "answer", limit)
            cells.append(_mean([r.hits1 for r in recs]))
        if any(c != "—" for c in cells):
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def run(args) -> None:
    from tot_mcp.strategies.embeddings import Embedder

    embedder = None
    by_kb: dict[str, list[str]] = {}
    for s in args.sets:
        by_kb.setdefault(SETS[s][3], []).append(s)
    for kb, set_names in by_kb.items():
        name = SETS[set_names[0]][2]
        if embedder is None:
            embedder = Embedder()
        warm = embedder.cache_snapshot()
        for m in args.methods:
            # each method starts from a just-opened KG (its label searches not remembered from
            # another method's run) and the embedder's cache as it was before any method ran: no
            # method is timed on work another did
            t0 = time.perf_counter()
            kg = open_kg(make_spec(name, str(args.data / kb)))
            print(
                f"[{name}] opened in {time.perf_counter() - t0:.1f}s for {m}",
                file=sys.stderr,
                flush=True,
            )
            embedder.restore_cache(warm)
            services = Services(
                [kg],
                embedder_factory=lambda e=embedder: e,
                cache_dir=args.cache_dir,
                wait_for_builds=True,
            )
            method = make_method(m, MethodOptions(llm=args.llm), services)
            for s in set_names:
                qfile, fmt = SETS[s][0], SETS[s][1]
                qs = [
                    q for q in read_questions(args.data / qfile, fmt) if not isinstance(q, BadLine)
                ]
                qs = qs[args.skip :][: args.limit]
                for task in _tasks(m):
                    todo_qs = (
                        [linking_question(q) for q in qs if q.topic] if task == "linking" else qs
                    )
                    out = args.out / f"{s}-{m}-{task}.jsonl"
                    done = {r.id for r in load_done(out)} if out.exists() else set()
                    todo = [q for q in todo_qs if q.id not in done]
                    t0 = time.perf_counter()
                    new = await run_questions(
                        todo, method, m, [kg], out=out, workers=1, keep_trace=False
                    )
                    recs = load_done(out)[: args.limit]
                    print(
                        f"{s:7s} {m:10s} {task:7s} n={len(recs)} (+{len(new)} in "
                        f"{time.perf_counter() - t0:.0f}s) hits@1={_mean([r.hits1 for r in recs])}",
                        file=sys.stderr,
                        flush=True,
                    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    p.add_argument("--methods", nargs="+", default=available(), choices=available())
    p.add_argument(
        "--limit", type=int, default=100, help="questions per set (the first N of each dev sample)"
    )
    p.add_argument(
        "--skip",
        type=int,
        default=0,
        help="leave out the first N of each set (the ones tuned on; give it its own --out)",
    )
    p.add_argument("--llm", default="offline")
    p.add_argument("--out", type=Path, default=REPO / "runs" / "side_by_side")
    p.add_argument(
        "--cache-dir", type=Path, default=None, help="index cache (default: the user cache dir)"
    )
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args(argv)
    if args.skip < 0:
        p.error("--skip must be ≥ 0")
    if args.limit < 1:
        p.error("--limit must be ≥ 1")
    if not args.data.is_dir():
        print(f"side_by_side: no benchmark data at {args.data}", file=sys.stderr)
        return 2
    for m in args.methods:
        get(m)  # an unknown or broken registration fails before anything loads
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        asyncio.run(run(args))
    print(table(args.out, args.sets, args.methods, args.limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
