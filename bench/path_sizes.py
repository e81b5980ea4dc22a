"""How many edges and entities one expansion must hold for a perfect walk to be exact: per MetaQA
dev question, its own relation path (the qtype file) walked over ``kb.txt`` as the tree search walks
it (never back through the question's entity), counting the edges of each hop and the entities it
reaches.

    python -m bench.path_sizes [--data ../shared/benchmarks] [--caps 50 100]

Prints, per set and cap, the questions with a hop of more edges than the cap, and with more entities
to select at an intermediate hop than the cap: what the edge cap and the selection cap of an
expansion cut. And how often the gold answer set is exactly that walk's end, and exactly the end of
a walk that may pass back through the question's entity (the rule the tree search's prompts state,
checked against the benchmark's answers).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from bench.datasets import BENCHMARKS
from bench.oracle import metaqa_path
from tot_mcp.kg_adapters.models import Direction


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=BENCHMARKS)
    p.add_argument("--caps", type=int, nargs="+", default=[50, 100])
    ns = p.parse_args(argv)
    out: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for line in (ns.data / "metaqa" / "kb.txt").read_text(encoding="utf-8").splitlines():
        head, rel, tail = line.split("|")
        out[(rel, "forward")][head].add(tail)
        out[(rel, "backward")][tail].add(head)
    heads = [f"a hop > {c} edges | a frontier > {c} entities" for c in ns.caps]
    heads += ["gold = the walk", "gold = a walk back through the entity"]
    print("| set | n | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|---|" * len(ns.caps) + "---|---|")
    for hops in (2, 3):
        d = ns.data / "metaqa" / f"{hops}-hop"
        lines = (d / "qa_dev_sample.txt").read_text(encoding="utf-8").splitlines()
        types = (d / "qa_dev_sample_qtype.txt").read_text(encoding="utf-8").splitlines()
        edges_over = dict.fromkeys(ns.caps, 0)
        frontier_over = dict.fromkeys(ns.caps, 0)
        exact = through = 0
        for line, qtype in zip(lines, types):
            topic = line.split("[", 1)[1].split("]", 1)[0]
            gold = set(line.split("\t", 1)[1].split("|"))
            current, loose, most_edges, most_frontier = {topic}, {topic}, 0, 0
            path = metaqa_path(qtype)
            for n, (rel, direction) in enumerate(path, 1):
                side = out[(rel, "forward" if direction is Direction.forward else "backward")]
                reached = [t for x in current for t in side.get(x, ())]
                loose = {t for x in loose for t in side.get(x, ())}
                most_edges = max(most_edges, len(reached))
                current = set(reached) - {topic}
                if n < len(path):
                    most_frontier = max(most_frontier, len(current))
            exact += current == gold
            through += loose - {topic} == gold
            for c in ns.caps:
                edges_over[c] += most_edges > c
                frontier_over[c] += most_frontier > c
        cells = " | ".join(f"{edges_over[c]} | {frontier_over[c]}" for c in ns.caps)
        print(f"| MetaQA {hops}-hop | {len(lines)} | {cells} | {exact} | {through} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
