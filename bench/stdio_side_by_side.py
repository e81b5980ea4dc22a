"""Two ``tot-mcp`` servers over stdio, the same random ``get_edges`` calls sent to each in turn,
from one client.

Why: on a shared machine two benchmark runs minutes apart differ by more than two trees do
(``bench.kg_bench``'s stdio rounds swing by 0.5 ms). Alternating every call between the two servers
puts both under the same load, so their ratio is what one would measure on a quiet machine. Used for
issue #22's "per-call cost against d2594f1" (docs/architecture.md)::

    git worktree add /tmp/wt-old d2594f1
    python -m venv --system-site-packages /tmp/venv-old
    /tmp/venv-old/bin/pip install --no-deps -e /tmp/wt-old
    python -m bench.stdio_side_by_side --other "/tmp/venv-old/bin/python -m server.cli" \
        --other-cwd /tmp/wt-old

The calls are ``bench.kg_bench``'s random lookups (same seed), on the MetaQA KB of ``../shared``
(else the embedded copy); each server is warmed with 100 calls first. Prints p50/p90 per server, the
ping floor, and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shlex
import statistics
import sys
import time
from contextlib import AsyncExitStack

from bench.kg_bench import kb_path, sample_lookups


async def _run(
    servers: dict[str, tuple[list[str], str | None]],
    calls: list[tuple[str, str, str]],
    warm: list[tuple[str, str, str]],
) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with AsyncExitStack() as stack:
        sessions = {}
        for name, (cmd, cwd) in servers.items():
            read, write = await stack.enter_async_context(
                stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:], cwd=cwd))
            )
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            sessions[name] = session
        for session in sessions.values():
            for entity, rel, direction in warm:
                await session.call_tool(
                    "get_edges",
                    {"entity_ids": [entity], "relation_id": rel, "direction": direction},
                )
        times: dict[str, list[float]] = {n: [] for n in sessions}
        pings: dict[str, list[float]] = {n: [] for n in sessions}
        for i, (entity, rel, direction) in enumerate(calls):
            order = list(sessions) if i % 2 else list(reversed(list(sessions)))
            for name in order:
                t = time.perf_counter()
                result = await sessions[name].call_tool(
                    "get_edges",
                    {"entity_ids": [entity], "relation_id": rel, "direction": direction},
                )
                times[name].append(time.perf_counter() - t)
                if result.is_error:
                    raise RuntimeError(f"{name}: get_edges failed: {result.content}")
                t = time.perf_counter()
                await sessions[name].send_ping()
                pings[name].append(time.perf_counter() - t)
        return {"times": times, "pings": pings}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.stdio_side_by_side", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument(
        "--other",
        required=True,
        help='the other server\'s command, e.g. "/tmp/venv-old/bin/python -m server.cli"',
    )
    ap.add_argument("--other-cwd", help="its working directory (an old tree's checkout)")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triples_file import load_triples_file

    path, _ = kb_path(None)
    kg = MemoryKG("metaqa", load_triples_file(path))
    lookups = sample_lookups(kg.index, args.calls + 100, random.Random(args.seed))
    calls = [
        (
            kg.node_id(lk.entity),
            f"metaqa:{kg.index.rel_local_ids[lk.relation]}",
            "forward" if lk.forward else "backward",
        )
        for lk in lookups
    ]
    del kg, lookups
    kg_arg = ["--kg", f"metaqa={path}"]
    servers = {
        "other": ([*shlex.split(args.other), *kg_arg], args.other_cwd),
        "this tree": ([sys.executable, "-m", "tot_mcp.server.cli", *kg_arg], None),
    }
    got = asyncio.run(_run(servers, calls[: args.calls], calls[args.calls :]))
    p50 = {n: statistics.median(v) * 1e3 for n, v in got["times"].items()}
    floor = {n: statistics.median(v) * 1e3 for n, v in got["pings"].items()}
    print("| server | get_edges p50 / p90 | ping p50 |\n|---|---|---|")
    for name, ts in got["times"].items():
        ts = sorted(ts)
        print(
            f"| {name} | {p50[name]:.2f} / {ts[int(0.9 * len(ts))] * 1e3:.2f} ms | "
            f"{floor[name]:.2f} ms |"
        )
    print(
        f"\nthis tree / other: {p50['this tree'] / p50['other']:.3f} (above the ping floor: "
        f"{(p50['this tree'] - floor['this tree']) / (p50['other'] - floor['other']):.3f}); "
        f"{args.calls} calls each"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
