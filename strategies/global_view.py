"""Where a strategy gets the global view of one KG (:class:`~kg_adapters.local_graph.LocalGraph`),
and the error it raises when the KG cannot give one: remote endpoints cannot list every entity and
triple, so they are refused with a clear :class:`RetrievalUnavailable` (the step tools still serve
them)."""

from __future__ import annotations

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.local_graph import LocalGraph

__all__ = ["LocalGraph", "RetrievalUnavailable", "local_graph"]


class RetrievalUnavailable(InvalidInput):
    """The strategy cannot run on this KG (remote endpoint, no text to index); the message says
    why."""


def local_graph(kg: Graph) -> LocalGraph:
    """The KG's local view, or :class:`RetrievalUnavailable` saying why there is none."""
    if not kg.capabilities.local_index:
        raise RetrievalUnavailable(
            f"KG {kg.name!r} ({kg.backend}) is not held locally; the retrieval "
            "strategies need every entity and triple (use an embedded, triple-file or RDF-file KG)"
        )
    view = kg.local_graph()  # type: ignore[attr-defined]  # capabilities.local_index says it has one
    if not view.n:
        raise RetrievalUnavailable(f"KG {kg.name!r} has no entities")
    return view
