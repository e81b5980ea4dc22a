"""What the checks before every answer cost: a strategy run bare and through
``grounding.run_checked``, alternately, question by question, in one process (so load on a shared
machine hits both alike).

    python -m bench.grounding_cost    # plan and tot, MetaQA 2-hop dev sample, 60 questions
    python -m bench.grounding_cost --methods plan --set mqa1 --limit 100

Prints per method the median latency bare and checked, their ratio, and how many questions the
checks refused (an answerable dev question should never be).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from bench.datasets import BENCHMARKS, load_sets


async def measure(methods: list[str], key: str, limit: int) -> list[str]:
    from tot_mcp.strategies.grounding import run_checked
    from tot_mcp.strategies.registry import Call, get
    from tot_mcp.strategies.services import Services

    _, kg, questions = next(load_sets(BENCHMARKS, [key], limit))
    services = Services([kg])
    await services.aembedder()
    rows = []
    for name in methods:
        s = get(name)
        bare: list[float] = []
        checked: list[float] = []
        refused = 0

        def call(q):
            return Call.of(s, services, kg, q.text)

        for q in questions[
            :2
        ]:  # warm the caches both paths share (indexes, the reasoner's statistics)
            await s.run(call(q))
            await run_checked(s, call(q))
        for i, q in enumerate(questions):
            # the second run of a question finds caches the first filled: which goes first
            # alternates
            for checks in (False, True) if i % 2 == 0 else (True, False):
                t0 = time.perf_counter()
                out = await (run_checked(s, call(q)) if checks else s.run(call(q)))
                (checked if checks else bare).append(time.perf_counter() - t0)
                refused += checks and out.status in ("no_entity", "uncertain", "unsupported")
        mb, mc = statistics.median(bare), statistics.median(checked)
        rows.append(
            f"| {name} | {key} | {len(questions)} | {1000 * mb:.0f} ms | {1000 * mc:.0f} ms | "
            f"{mc / mb:.2f}× | {refused} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=["plan", "tot"])
    ap.add_argument("--set", default="mqa2")
    ap.add_argument("--limit", type=int, default=60)
    args = ap.parse_args(argv)
    if not BENCHMARKS.is_dir():
        print(f"bench.grounding_cost: {BENCHMARKS} not found", file=sys.stderr)
        return 2
    print("| method | set | n | median bare | median checked | ratio | refused |")
    print("|---|---|---|---|---|---|---|")
    for row in asyncio.run(measure(args.methods, args.set, args.limit)):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
