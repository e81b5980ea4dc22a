"""``Runtime``: routing IDs to KGs, and shared services that exist only once someone asks for
them."""

from __future__ import annotations

import asyncio

import pytest

from tot_mcp.strategies.settings import parse_config
from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.errors import InvalidInput, UnknownKG
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.server.app import build_server
from tot_mcp.server.runtime import Runtime, ServiceUnavailable


async def test_ids_are_routed_by_prefix_and_several_kgs_are_linked_by_label(embedded_kg):
    films = Graph(MemoryKG("films", embedded_kg.store.index))
    runtime = Runtime({"movies": embedded_kg, "films": films})
    graph = runtime.graph
    assert graph.owner("movies:E1") is embedded_kg and graph.owner("films:E1") is films
    assert runtime.select(None) is runtime.select("all") is graph
    assert list(runtime.select("films").kgs) == ["films"]
    assert [(r.from_kg, r.to_kg, r.kind) for r in graph.linker.rules] == [
        ("movies", "films", "label")
    ]
    assert await graph.same_as("movies:E1407") == ["films:E1407"]  # Tom Hanks, by label
    with pytest.raises(UnknownKG, match="configured: movies, films"):
        graph.owner("wd:Q42")
    with pytest.raises(UnknownKG, match="no KG named 'wd'"):
        runtime.select("wd")
    with pytest.raises(InvalidInput, match="malformed ID"):
        await graph.get_relations(["E1"])
    assert (
        Runtime(
            {"movies": embedded_kg, "films": films},
            config=parse_config({"linking": {"enabled": False}}),
        ).graph.linker.rules
        == []
    )
    with pytest.raises(InvalidInput, match="registered as 'cinema' is named 'movies'"):
        Runtime({"cinema": embedded_kg})


async def test_the_embedder_is_created_on_first_use_only_and_shared(embedded_kg):
    made = []

    def factory():
        made.append(1)
        return object()

    runtime = Runtime({"movies": embedded_kg}, embedder_factory=factory)
    build_server(runtime)
    assert made == []  # building the server does not load the model
    services = runtime.services
    first, second = await asyncio.gather(services.aembedder(), services.aembedder())
    assert first is second and services.models.embedder() is first and made == [1]


def test_the_llm_comes_from_the_config_and_is_built_once(embedded_kg):
    bare = Runtime({"movies": embedded_kg})
    with pytest.raises(ServiceUnavailable, match=r"no LLM configured: add an \[llm\] table"):
        bare.llm()
    config = parse_config({"llm": {"backend": "scripted"}})
    runtime = Runtime({"movies": embedded_kg}, config=config)
    assert runtime.llm() is runtime.llm()
    assert type(runtime.llm()).__name__ == "ScriptedLLM"
    with pytest.raises(InvalidInput, match="llm.backend: no LLM backend 'nope' \\(known: "):
        parse_config({"llm": {"backend": "nope"}})  # refused at start-up, not at the first call


def test_open_defaults_to_the_embedded_kg_and_rejects_a_name_given_twice():
    from tot_mcp.kg_adapters.spec import make_spec

    with pytest.raises(InvalidInput, match="given twice"):
        Runtime.open([make_spec("a", "embedded"), make_spec("a", "embedded")])
    runtime = Runtime.open()
    assert list(runtime.kgs) == ["movies"] and runtime.load_seconds is not None


async def test_kgs_that_do_io_get_a_result_cache_and_in_memory_kgs_stay_bare(tmp_path):
    from tot_mcp.kg_adapters.config import open_kgs

    path = tmp_path / "tiny.txt"
    path.write_text(
        "Alien|directed_by|Ridley Scott\nBlade Runner|directed_by|Ridley Scott\n", encoding="utf-8"
    )
    config = parse_config(
        {
            "kg": {
                "mem": {"spec": str(path)},
                "store": {"spec": str(path), "backend": "oxigraph", "store": "memory"},
            }
        }
    )
    kgs = open_kgs(config=config, cache_weight=1000, cache_ttl=60)
    assert isinstance(kgs["mem"].store, MemoryKG) and kgs["mem"].cache is None
    assert kgs["store"].cache is not None
    (scott,) = [m.entity.id for m in await kgs["store"].initialize("[Ridley Scott]", limit=1)]
    rel = (await kgs["store"].get_relations([scott])).relations[0]
    first = await kgs["store"].get_edges([scott], rel.id, rel.direction)
    again = await kgs["store"].get_edges([scott], rel.id, rel.direction)
    assert again == first and len(first.edges) == 2
    assert kgs["store"].cache.stats().hits >= 1
    assert open_kgs(config=config, cache_weight=0)["store"].cache is None
