"""Label links on linked-MetaQA by kind: which same-label matches are linked, which refused.

    python -m bench.link_kinds                  # ../shared/benchmarks/linked-metaqa
    python -m bench.link_kinds --data DIR       # another split of the same shape

Every node of ``films.txt`` and of ``catalog.ttl`` is linked into the other KG by label, as the
default rule links them (``Linker.prefetch``, a thousand at a time, as a walk links a frontier).
Each same-label match — what a label link joined before kinds were told apart: ``find_by_labels``,
the exact label else any case, at most ``max_label_matches`` — is counted as linked or not, and
classed by what the data's generator made each side (films.txt: a head is a film, a tail a person;
catalog.ttl: ``titleN`` a film, ``genreN``/``tagN``/``languageN``, or a literal). Those classes are
the benchmark's answer key, read here only to score the links.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.datasets import BENCHMARKS

LINKED = BENCHMARKS / "linked-metaqa"
CATALOG_NODE = re.compile(r"http://example\.org/catalog/([a-z]+)\d+$")


def classes(data: Path) -> tuple[set[str], set[str]]:
    """films.txt's films and persons by name (a name may be both: MetaQA merges same names)."""
    films, persons = set(), set()
    for line in (data / "films.txt").read_text(encoding="utf-8").splitlines():
        head, _, tail = line.split("|")
        films.add(head)
        persons.add(tail)
    return films, persons


async def run(data: Path) -> None:
    from tot_mcp.kg_adapters.sameness import Linker, rules_for
    from tot_mcp.kg_adapters.spec import make_spec, open_kg

    kgs = {
        "films": open_kg(make_spec("films", str(data / "films.txt"))),
        "catalog": open_kg(make_spec("catalog", str(data / "catalog.ttl"))),
    }
    linker = Linker(kgs, rules_for(kgs, []))
    films, persons = classes(data)

    async def kind(eid: str) -> str:
        kg = kgs[eid.split(":", 1)[0]]
        key = await kg.entity_key(eid) or ""
        if kg.name == "films":
            return "film" if key in films else "person" if key in persons else "other"
        m = CATALOG_NODE.match(key)
        return ("film" if m.group(1) == "title" else m.group(1)) if m else "literal"

    started = time.perf_counter()
    before: Counter = Counter()
    after: Counter = Counter()
    examples: dict[tuple, list[str]] = defaultdict(list)
    for here, into in (("films", "catalog"), ("catalog", "films")):
        this, other = kgs[here], kgs[into]
        ids = [this.node_id(i) for i in range(len(this.index.nodes))]
        for i in range(0, len(ids), 1000):
            await linker.prefetch(ids[i : i + 1000], into)
        labels = await this.labels_of(ids)
        names = list(dict.fromkeys(labels.values()))
        matches = await other.find_by_labels(names, limit=linker.max_label_matches)
        for eid in ids:
            linked = set(linker.known(eid, into).ids)
            for m in matches.get(labels.get(eid, ""), []):
                key = (here, await kind(eid), await kind(m.id))
                before[key] += 1
                if m.id in linked:
                    after[key] += 1
                elif len(examples[key]) < 4:
                    examples[key].append(labels[eid])
    st = linker.stats()
    print(
        f"label links on {data}: {st.label_links:,} made, {st.refused:,} refused as another "
        f"kind ({time.perf_counter() - started:.0f} s)"
    )
    print(
        "| linked from | kind → kind | same kind | matches (linked before) | linked now "
        "| refused | e.g. refused |"
    )
    print("|---|---|---|---|---|---|---|")
    for key in sorted(before):
        here, a, b = key
        print(
            f"| {here} | {a} → {b} | {'yes' if a == b else 'no'} | {before[key]:,} | "
            f"{after[key]:,} | {before[key] - after[key]:,} | {', '.join(examples[key])} |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=Path, default=LINKED, help="folder with films.txt and catalog.ttl"
    )
    args = ap.parse_args(argv)
    if not (args.data / "films.txt").is_file() or not (args.data / "catalog.ttl").is_file():
        print(
            f"bench.link_kinds: {args.data}/films.txt or catalog.ttl not found (the benchmark "
            "data sits beside the repository)",
            file=sys.stderr,
        )
        return 2
    asyncio.run(run(args.data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
