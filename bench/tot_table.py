"""Run ``tot-search`` over every dev sample in ``../shared/benchmarks`` and print the README's
results table.

    # all sets, all questions, offline policy, paper defaults
    python -m bench.tot_table
    python -m bench.tot_table --limit 50 --sets mqa1 pq2 --method chain

Each set is one real ``tot-search`` run (same settings everywhere) writing
``runs/<method>-<set>.jsonl``; the table is computed from those files, so it shows exactly what the
CLI measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from bench.datasets import BENCHMARKS as SHARED, DEV_SETS

# MetaQA runs on the embedded KG (the same triples as metaqa/kb.txt); PathQuestion sets name their
# own KB.
SETS = {
    key: (d.title, d.questions, d.fmt, None if d.fmt == "metaqa" else d.kb)
    for key, d in DEV_SETS.items()
}


def run_set(key: str, args: argparse.Namespace, out: Path) -> None:
    _, questions, fmt, kb = SETS[key]
    cmd = [  # this interpreter's tot-search, whether or not its venv is on PATH
        sys.executable,
        "-m",
        "tot_mcp.strategies.search_cli",
        "--questions",
        str(SHARED / questions),
        "--format",
        fmt,
        "--method",
        args.method,
        "--out",
        str(out),
        "--quiet",
        "--no-trace",
    ]
    if kb:
        cmd += ["--kg", str(SHARED / kb)]
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    out.unlink(missing_ok=True)
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def summarize(path: Path) -> dict:
    rows = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    lat = [r["latency_s"] for r in rows]
    return {
        "n": len(rows),
        "hits1": statistics.fmean(r["hits1"] for r in rows),
        "f1": statistics.fmean(r["f1"] for r in rows),
        "median_ms": 1000 * statistics.median(lat),
        "expansions": statistics.median(r["expansions"] for r in rows),
        "calls": statistics.fmean(r["llm_calls"] for r in rows),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    ap.add_argument("--method", default="tot")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    args = ap.parse_args(argv)
    if not SHARED.is_dir():
        print(
            f"bench.tot_table: {SHARED} not found (the benchmark data sits beside the repository)",
            file=sys.stderr,
        )
        return 2
    args.runs.mkdir(parents=True, exist_ok=True)
    print(
        "| set | n | Hits@1 | answer F1 | median latency | median expansions | LLM calls / "
        "question |"
    )
    print("|---|---|---|---|---|---|---|")
    for key in args.sets:
        out = args.runs / f"{args.method}-{key}.jsonl"
        run_set(key, args, out)
        s = summarize(out)
        print(
            f"| {SETS[key][0]} | {s['n']} | {s['hits1']:.3f} | {s['f1']:.3f} | "
            f"{s['median_ms']:.0f} ms | {s['expansions']:g} | {s['calls']:.1f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
