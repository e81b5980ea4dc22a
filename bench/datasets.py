"""The dev samples in ``../shared/benchmarks`` (beside the repository), named once for every
benchmark script."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"


@dataclass(frozen=True)
class DevSet:
    key: str  # short name: mqa1..3, pq2, pq3, pql2, pql3
    title: str  # as the benchmark names it: "MetaQA 1-hop", "PQ-2H", ...
    questions: str  # question file, relative to BENCHMARKS
    fmt: str  # metaqa | pathquestion
    kb: str  # KB file, relative to BENCHMARKS
    kg_name: str  # the KG name the scripts give that KB


DEV_SETS: dict[str, DevSet] = {
    s.key: s
    for s in (
        DevSet(
            "mqa1",
            "MetaQA 1-hop",
            "metaqa/1-hop/qa_dev_sample.txt",
            "metaqa",
            "metaqa/kb.txt",
            "metaqa",
        ),
        DevSet(
            "mqa2",
            "MetaQA 2-hop",
            "metaqa/2-hop/qa_dev_sample.txt",
            "metaqa",
            "metaqa/kb.txt",
            "metaqa",
        ),
        DevSet(
            "mqa3",
            "MetaQA 3-hop",
            "metaqa/3-hop/qa_dev_sample.txt",
            "metaqa",
            "metaqa/kb.txt",
            "metaqa",
        ),
        DevSet(
            "pq2",
            "PQ-2H",
            "pathquestion/PQ-2H/dev_sample.txt",
            "pathquestion",
            "pathquestion/kb/2H-kb.txt",
            "pq2",
        ),
        DevSet(
            "pq3",
            "PQ-3H",
            "pathquestion/PQ-3H/dev_sample.txt",
            "pathquestion",
            "pathquestion/kb/3H-kb.txt",
            "pq3",
        ),
        DevSet(
            "pql2",
            "PQL-2H",
            "pathquestion/PQL-2H/dev_sample.txt",
            "pathquestion",
            "pathquestion/kb/PQL2-KB.txt",
            "pql2",
        ),
        DevSet(
            "pql3",
            "PQL-3H",
            "pathquestion/PQL-3H/dev_sample.txt",
            "pathquestion",
            "pathquestion/kb/PQL3-KB.txt",
            "pql3",
        ),
    )
}


def by_benchmark_name() -> dict[str, DevSet]:
    """MetaQA sets by short key (mqa1..3), PathQuestion sets by their own names (PQ-2H ...), as the
    strategy benches spell them on the command line."""
    return {s.key if s.fmt == "metaqa" else s.title: s for s in DEV_SETS.values()}


def load_sets(
    data: Path, names: Iterable[str], limit: int | None = None
) -> Iterator[tuple[str, object, list]]:
    """(name, KG, first ``limit`` questions) per set, named by key (``pq2``) or as
    :func:`by_benchmark_name` spells it (``PQ-2H``); each KB is loaded once and shared by the sets
    that ask the same KB. Malformed question lines are skipped."""
    from tot_mcp.kg_adapters.graph import Graph
    from tot_mcp.kg_adapters.memory import MemoryKG
    from tot_mcp.kg_adapters.triples_file import load_triples_file
    from tot_mcp.strategies.benchmarks.formats import BadLine, read_questions

    sets = {**DEV_SETS, **by_benchmark_name()}
    kgs: dict[str, Graph] = {}
    for name in names:
        d = sets[name]
        if d.kg_name not in kgs:
            kgs[d.kg_name] = Graph(MemoryKG(d.kg_name, load_triples_file(data / d.kb)))
        questions = [
            q for q in read_questions(data / d.questions, d.fmt) if not isinstance(q, BadLine)
        ][:limit]
        yield name, kgs[d.kg_name], questions
