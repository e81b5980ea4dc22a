"""A small movie KG with known answers, shared by the retrieval-strategy tests (ARK, router, beam,
rerank).

Two loosely linked clusters (Ada Stone's and Eli Park's films; Ivo Tan's mountain films) so
community detection has structure to find, and 1-, 2- and 3-hop questions whose answers are known by
construction.
"""

from __future__ import annotations

from pathlib import Path

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triples_file import load_triples_file
from tot_mcp.strategies.llm.base import LLM

TRIPLES = """\
Night Harbor|directed_by|Ada Stone
Night Harbor|starred_actors|Ben Cole
Night Harbor|starred_actors|Cara Diaz
Night Harbor|has_genre|Drama
Night Harbor|release_year|1999
Paper Moons|directed_by|Ada Stone
Paper Moons|starred_actors|Dev Rao
Paper Moons|has_genre|Comedy
Paper Moons|release_year|2003
Iron Orchard|directed_by|Eli Park
Iron Orchard|starred_actors|Ben Cole
Iron Orchard|has_genre|Thriller
Iron Orchard|release_year|2003
Glass Rivers|directed_by|Eli Park
Glass Rivers|starred_actors|Fay Lin
Glass Rivers|has_genre|Drama
Glass Rivers|written_by|Gus Hale
Silent Meadow|directed_by|Hana Kim
Silent Meadow|written_by|Gus Hale
Silent Meadow|starred_actors|Cara Diaz
Silent Meadow|has_genre|Romance
Blue Canyon|directed_by|Ivo Tan
Blue Canyon|starred_actors|Jun Mori
Blue Canyon|starred_actors|Kai Sato
Blue Canyon|has_genre|Adventure
Red Summit|directed_by|Ivo Tan
Red Summit|starred_actors|Jun Mori
Red Summit|starred_actors|Lea Ford
Red Summit|has_genre|Adventure
Red Summit|in_language|Japanese
Green Ridge|directed_by|Ivo Tan
Green Ridge|starred_actors|Kai Sato
Green Ridge|starred_actors|Lea Ford
Green Ridge|has_genre|Documentary
Green Ridge|in_language|Japanese
"""


def make_kg(tmp: Path, name: str = "mini") -> Graph:
    path = tmp / "mini_kb.txt"
    path.write_text(TRIPLES, encoding="utf-8")
    return Graph(MemoryKG(name, load_triples_file(path)))


def node(kg: Graph, label: str) -> str:
    memory = kg.store
    for i, n in enumerate(memory.index.nodes):
        if n.label == label:
            return memory.node_id(i)
    raise KeyError(label)


class ScriptedLLM(LLM):
    """Answers from a queue (the last answer repeats); records every prompt. Raising answers are
    exceptions."""

    name = "scripted"

    def __init__(self, answers: list[str | Exception]) -> None:
        super().__init__()
        self.answers = list(answers)
        self.prompts: list[str] = []

    async def complete(
        self, prompt, *, system=None, max_tokens=512, temperature=0.7, stop=None
    ) -> str:
        self.prompts.append(prompt)
        self.usage.calls += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


_EMBEDDER: list = []


def shared_embedder():
    """One MiniLM instance for every retrieval test module in the session (~6 s to load)."""
    if not _EMBEDDER:
        from tot_mcp.strategies.embeddings import Embedder

        _EMBEDDER.append(Embedder())
    return _EMBEDDER[0]


def make_service(cache_dir: Path):
    from tot_mcp.strategies.services import Services

    return Services({}, embedder_factory=shared_embedder, cache_dir=cache_dir)


async def run_strategy(name: str, services, kg, query: str, llm: LLM | None = None, **options):
    """Run the registered strategy ``name`` as ``tot-search`` and the tools do: its options
    validated, its indexes declared, a scripted ``llm`` when given (else offline)."""
    from tot_mcp.strategies.registry import Call, get

    s = get(name)
    call = Call(
        services=services,
        kg=kg,
        query=query,
        options=s.parse_options(options),
        llm_kind="scripted" if llm else "offline",
        llm_factory=(lambda: llm) if llm else None,
        needs=s.needs,
        method=name,
    )
    return await s.run(call)


async def run_checked_strategy(name: str, services, kg, query: str, llm: LLM | None = None):
    """The registered strategy ``name`` as every answering path runs it: through
    ``strategies.grounding.run_checked``, with the services' options for it, a scripted ``llm`` when
    given (else offline), and no index built within the call."""
    from tot_mcp.strategies.grounding import run_checked
    from tot_mcp.strategies.registry import Call, get

    s = get(name)
    call = Call(
        services=services,
        kg=kg,
        query=query,
        options=services.options(s),
        needs=s.needs,
        method=name,
        llm_kind="scripted" if llm else "offline",
        llm_factory=(lambda: llm) if llm else None,
        build=False,
    )
    return await run_checked(s, call)
