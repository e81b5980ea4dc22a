"""The KG contract stays small, and backends implement it rather than a second interface beside it.

A backend implements ten reads (``kg_adapters/base.py``); everything derived lives once in
``kg_adapters/graph.py``. A public method a backend adds outside the contract is a method callers
cannot reach through the façade — or one they reach around it — so it is refused here, except the
optional abilities a backend declares in its capabilities.
"""

from __future__ import annotations

import inspect

from tot_mcp.kg_adapters.base import KnowledgeGraph
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.oxigraph_store import OxigraphKG
from tot_mcp.kg_adapters.rdf_file import RdfFileKG
from tot_mcp.kg_adapters.sparql.kg import SparqlKG

#: the optional abilities, each named by the capability that declares it
DECLARED = {
    "sparql_query": "sparql",
    "search_relations": "relation_search",
    "local_graph": "local_index",
    # the ID scheme of the local view: node ↔ entity ID
    "node_id": "local_index",
    "node_of": "local_index",
}


def public_methods(cls: type) -> set[str]:
    return {
        n for n, v in inspect.getmembers(cls) if not n.startswith("_") and inspect.isfunction(v)
    }


def test_the_contract_has_at_most_ten_methods():
    assert len(public_methods(KnowledgeGraph)) <= 10, sorted(public_methods(KnowledgeGraph))


def test_every_backend_implements_the_contract_and_only_declared_extras():
    contract = public_methods(KnowledgeGraph)
    for cls in (MemoryKG, RdfFileKG, OxigraphKG, SparqlKG):
        extras = public_methods(cls) - contract
        undeclared = {m for m in extras if m not in DECLARED or not _may_declare(cls, DECLARED[m])}
        assert not undeclared, f"{cls.__name__} adds {sorted(undeclared)} beside the contract"
        assert not getattr(cls, "__abstractmethods__", None), cls.__name__


def _may_declare(cls: type, capability: str) -> bool:
    """Whether the backend can declare the capability: on its class, or (SPARQL's query tool, a
    configuration switch) on its instances, which is what the façade reads."""
    return capability == "sparql" or getattr(cls.capabilities, capability)


def test_the_facade_is_no_backend_and_forwards_nothing_by_hand():
    """Graph is not a KnowledgeGraph (callers cannot mistake one for the other) and has no
    __getattr__ forwarding: a method the façade lacks is an error, never a silent fall-through to
    the backend."""
    assert not issubclass(Graph, KnowledgeGraph)
    assert "__getattr__" not in vars(Graph)
