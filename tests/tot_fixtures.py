"""Shared fixtures for the Tree-of-Traversals tests: a tiny movie KG and a policy driven by plain
functions."""

from __future__ import annotations

from collections.abc import Callable

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triple_index import TripleIndex
from tot_mcp.strategies.tot.actions import Action
from tot_mcp.strategies.tot.policy import Policy
from tot_mcp.strategies.tot.state import TraversalState

MOVIE_TRIPLES = [
    ("The Matrix", "directed_by", "Lana Wachowski"),
    ("The Matrix", "starred_actors", "Keanu Reeves"),
    ("The Matrix", "release_year", "1999"),
    ("Speed", "directed_by", "Jan de Bont"),
    ("Speed", "starred_actors", "Keanu Reeves"),
    ("Speed", "starred_actors", "Sandra Bullock"),
    ("Gravity", "starred_actors", "Sandra Bullock"),
    ("Gravity", "directed_by", "Alfonso Cuaron"),
    ("Lonely Node", "release_year", "2001"),
]


def make_kg(name: str = "m", triples: list[tuple[str, str, str]] | None = None) -> MemoryKG:
    index = TripleIndex()
    for h, r, t in triples or MOVIE_TRIPLES:
        index.add(index.node(h), index.relation(r), index.node(t))
    index.freeze()
    return Graph(MemoryKG(name, index))


async def eid(kg: MemoryKG, label: str) -> str:
    """The ID of the entity with exactly this label."""
    hits = await kg.search_entities(label, limit=1)
    assert hits and hits[0].entity.label == label, label
    return hits[0].entity.id


class FunctionPolicy(Policy):
    """Proposes ``propose_fn(state)`` and values states with ``value_fn(state)``; counts calls like
    an LLM would."""

    def __init__(
        self,
        propose_fn: Callable[[TraversalState], list[Action]],
        value_fn: Callable[[TraversalState], float],
    ) -> None:
        super().__init__()
        self.propose_fn = propose_fn
        self.value_fn = value_fn
        self.seen_states: list[TraversalState] = []

    async def propose(self, state: TraversalState, k: int) -> list[Action]:
        self.usage.calls += 1
        self.seen_states.append(state)
        return self.propose_fn(state)[:k]

    async def value(self, state: TraversalState) -> float:
        self.usage.calls += 1
        return self.value_fn(state)
