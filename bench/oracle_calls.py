"""LLM calls Tree-of-Traversals spends per MetaQA question with a perfect (oracle) model, old vs new
protocol.

    python -m bench.oracle_calls --limit 30 [--k 3] [--data ../shared/benchmarks]

The oracle (:mod:`bench.oracle`) answers from each question's gold relation path (the qtype files),
so the counts measure the driver, not a model. ``old`` = PromptedPolicy(batch=False): the same
prompt sampled k times, one value call per child; ``new`` = batch=True: no call without a choice,
one call proposing up to k distinct actions, one call valuing a node's children, none for a lone
intermediate child.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from pathlib import Path

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triples_file import load_triples_file
from tot_mcp.strategies.tot.asm import AsmConfig, TraversalASM
from bench.oracle import OracleLLM, metaqa_path
from tot_mcp.strategies.tot.prompted import PromptedPolicy
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

TARGETS = {2: 10, 3: 15}


def load(data: Path, hops: int, limit: int) -> list[tuple[str, list[str], str]]:
    d = data / "metaqa" / f"{hops}-hop"
    qs = (d / "qa_dev_sample.txt").read_text(encoding="utf-8").splitlines()
    types = (d / "qa_dev_sample_qtype.txt").read_text(encoding="utf-8").splitlines()
    out = []
    for line, qtype in zip(qs, types):
        text, _, answers = line.partition("\t")
        out.append(
            (text.strip(), [a.strip() for a in answers.split("|") if a.strip()], qtype.strip())
        )
    return out[:limit]


async def run_one(kg, question, qtype, batch: bool, k: int, alternatives: bool):
    llm = OracleLLM(kg, {question: metaqa_path(qtype)}, alternatives=alternatives)
    policy = PromptedPolicy(llm, batch=batch)
    search = TreeSearch(TraversalASM(kg, AsmConfig()), policy, SearchConfig(k=k))
    return await search.run(question)


async def main_async(args) -> None:
    kg = Graph(MemoryKG("metaqa", load_triples_file(Path(args.data) / "metaqa" / "kb.txt")))
    print(
        f"k={args.k}, limit={args.limit} questions per set, oracle alternatives={args.alternatives}"
    )
    print(
        "| set | protocol | Hits@1 | answered | median calls | max calls | median tokens | target "
        "calls | met |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for hops in (2, 3):
        questions = load(Path(args.data), hops, args.limit)
        for name, batch in (("old", False), ("new", True)):
            hits, answered, calls, tokens = 0, 0, [], []
            for text, gold, qtype in questions:
                r = await run_one(kg, text, qtype, batch, args.k, args.alternatives)
                top = r.answer.labels[0] if r.answer.labels else ""
                hits += top.casefold() in {g.casefold() for g in gold}
                answered += r.status == "answered"
                calls.append(r.usage.calls)
                tokens.append(r.usage.input_tokens + r.usage.output_tokens)
            n = len(questions)
            h1 = hits / n if n else 0.0
            target = TARGETS[hops]
            met = statistics.median(calls) <= target and max(calls) <= target and h1 == 1.0
            print(
                f"| MetaQA {hops}-hop | {name} | {h1:.3f} | {answered}/{n} | "
                f"{statistics.median(calls):g} | {max(calls)} | {statistics.median(tokens):g} | <= "
                f"{target} | {'yes' if met else 'no'} |"
            )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "benchmarks")
    )
    p.add_argument("--limit", type=int, default=30)
    p.add_argument("--k", type=int, default=3)
    p.add_argument(
        "--alternatives", action="store_true", help="the oracle also lists off-path relations"
    )
    asyncio.run(main_async(p.parse_args(argv)))


if __name__ == "__main__":
    main()
