"""The KG tools as an MCP client sees them (SDK client connected in-process to ``build_server``).

Specification: each tool returns a typed structured result that agrees with the adapter, plus the
compact text rendering; calls that mix KGs are split and merged; every result is bounded and says
how to fetch more; bad input comes back as a one-line ``is_error`` result and the server keeps
answering.
"""

from __future__ import annotations

import json

import pytest
from mcp_client import inprocess_client, text_of

from tot_mcp.kg_adapters.graph import Graph
from tot_mcp.kg_adapters.base import Capabilities, Limits
from tot_mcp.kg_adapters.environment import Environment
from tot_mcp.kg_adapters.errors import BackendError
from tot_mcp.kg_adapters.memory import MemoryKG
from tot_mcp.kg_adapters.triples_file import load_triples_file
from tot_mcp.server.runtime import Runtime
from tot_mcp.strategies.settings import parse_config

TOM_HANKS = "movies:E1407"


@pytest.fixture
def runtime(embedded_kg) -> Runtime:
    return Runtime({"movies": embedded_kg})


@pytest.fixture
def mini_kg(tmp_path) -> MemoryKG:
    path = tmp_path / "mini.txt"
    path.write_text(
        "Ada Lovelace|collaborated_with|Charles Babbage\nCharles Babbage|designed|Analytical "
        "Engine\n"
    )
    return Graph(MemoryKG("mini", load_triples_file(path)))


async def call(client, tool: str, **args):
    result = await client.call_tool(tool, args)
    return result


# -- discovery -------------------------------------------------------------------------------------
async def test_lists_the_six_kg_tools_read_only_with_input_and_output_schemas(runtime):
    async with inprocess_client(runtime) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {
        "initialize",
        "search_entities",
        "get_relations",
        "get_edges",
        "describe_entity",
        "list_kgs",
    } <= set(tools)
    for name in (
        "initialize",
        "search_entities",
        "get_relations",
        "get_edges",
        "describe_entity",
        "list_kgs",
    ):
        tool = tools[name]
        assert tool.annotations.read_only_hint is True
        assert tool.annotations.open_world_hint is False  # the embedded KG is local
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert tool.description
    edges = tools["get_edges"].input_schema
    assert set(edges["required"]) == {"relation_id"}  # entity_ids, or from_result in their place
    assert {"entity_ids", "from_result"} <= set(edges["properties"]) and "ctx" not in edges[
        "properties"
    ]
    assert edges["properties"]["entity_ids"]["maxItems"] == 50  # every cap is in the schema
    assert edges["properties"]["limit"]["maximum"] == 200
    assert tools["follow_path"].input_schema["properties"]["hops"]["maxItems"] == 4


# -- the Tree-of-Traversals walk -------------------------------------------------------------------
async def test_initialize_links_a_bracketed_mention_first(runtime):
    async with inprocess_client(runtime) as client:
        result = await call(client, "initialize", query="what movies did [Tom Hanks] star in")
    assert not result.is_error
    top = result.structured_content["entities"][0]
    # from his edges (kg_adapters/describe.py)
    described = "starred actor of 32; has directed 2; has written 2"
    assert top["entity"] == {
        "id": TOM_HANKS,
        "label": "Tom Hanks",
        "description": described,
        "kg": "movies",
    }
    assert top["match"] == "exact" and top["mention"] == "Tom Hanks"
    assert result.structured_content["kgs"] == ["movies"]
    assert text_of(result).splitlines()[1].startswith(f"{TOM_HANKS}: Tom Hanks - {described}")


async def test_get_relations_lists_both_directions_with_counts(runtime):
    async with inprocess_client(runtime) as client:
        result = await call(client, "get_relations", entity_ids=[TOM_HANKS])
    rels = {(r["id"], r["direction"]): r["count"] for r in result.structured_content["relations"]}
    assert rels[("movies:starred_actors", "backward")] == 32
    assert all(
        direction == "backward" for _, direction in rels
    )  # a person is only ever a movie's attribute
    assert "movies:starred_actors (backward) [32]: inverse of starred actors" in text_of(result)


async def test_get_relations_of_one_entity_ends_saying_where_the_other_relations_are(runtime):
    async with inprocess_client(runtime) as client:
        one = await call(client, "get_relations", entity_ids=[TOM_HANKS])
        two = await call(client, "get_relations", entity_ids=[TOM_HANKS, "movies:E24335"])
    hint = one.structured_content["hint"]
    assert "get_relations(search=...)" in hint
    assert text_of(one).splitlines()[-1] == hint  # the text says it too, last
    assert two.structured_content.get("hint") is None
    assert "get_relations(search=" not in text_of(two)


async def test_get_edges_backward_from_an_actor_returns_his_films_as_the_adapter_does(
    runtime, embedded_kg
):
    async with inprocess_client(runtime) as client:
        result = await call(
            client,
            "get_edges",
            entity_ids=[TOM_HANKS],
            relation_id="movies:starred_actors",
            direction="backward",
        )
    page = result.structured_content
    expected = await embedded_kg.get_edges([TOM_HANKS], "movies:starred_actors", "backward")
    assert [e["target"] for e in page["edges"]] == [e.target for e in expected.edges]
    labels = {page["entities"][e["target"]]["label"] for e in page["edges"]}
    assert {"Larry Crowne", "Philadelphia", "Forrest Gump", "The Terminal"} <= labels
    assert page["truncated"] is False and page["next_offset"] is None
    text = text_of(result)
    assert text.startswith(
        f"{TOM_HANKS} Tom Hanks:\n  starred_actors (inverse) [32]: movies:E1406 Larry Crowne, "
    )


async def test_get_edges_pages_are_bounded_and_chain_through_next_offset(embedded_kg):
    runtime = Runtime({"movies": embedded_kg}, Limits(max_edges=10))
    seen: list[str] = []
    async with inprocess_client(runtime) as client:
        offset = 0
        while offset is not None:
            result = await call(
                client,
                "get_edges",
                entity_ids=[TOM_HANKS],
                relation_id="movies:starred_actors",
                direction="backward",
                limit=50,
                offset=offset,
            )  # limit above the cap is clamped
            page = result.structured_content
            assert len(page["edges"]) <= 10
            if page["truncated"]:
                assert f"offset={page['next_offset']}" in text_of(result)
            seen += [e["target"] for e in page["edges"]]
            offset = page["next_offset"]
    full = await embedded_kg.get_edges([TOM_HANKS], "movies:starred_actors", "backward", limit=200)
    assert seen == [e.target for e in full.edges]


async def test_two_hop_walk_actor_to_films_to_directors(runtime):
    async with inprocess_client(runtime) as client:
        films = await call(
            client,
            "get_edges",
            entity_ids=[TOM_HANKS],
            relation_id="movies:starred_actors",
            direction="backward",
        )
        film_ids = [e["target"] for e in films.structured_content["edges"]][:20]
        directors = await call(
            client, "get_edges", entity_ids=film_ids, relation_id="movies:directed_by"
        )
    names = {e["label"] for e in directors.structured_content["entities"].values()}
    assert "Robert Zemeckis" in names or "Steven Spielberg" in names
    sources = {e["source"] for e in directors.structured_content["edges"]}
    assert sources <= set(film_ids)


async def test_search_describe_and_list_kgs(runtime):
    async with inprocess_client(runtime) as client:
        search = await call(client, "search_entities", text="Forrest Gump", limit=3)
        desc = await call(client, "describe_entity", entity_id=TOM_HANKS)
        kgs = await call(client, "list_kgs")
    assert search.structured_content["entities"][0]["entity"]["label"] == "Forrest Gump"
    assert len(search.structured_content["entities"]) <= 3
    assert desc.structured_content["entity"]["label"] == "Tom Hanks"
    described = "starred actor of 32; has directed 2; has written 2"
    assert text_of(desc).startswith(f"{TOM_HANKS}: Tom Hanks - {described}\nrelations:")
    info = kgs.structured_content["kgs"][0]
    assert (info["name"], info["backend"], info["entities"], info["triples"]) == (
        "movies",
        "memory",
        43234,
        133582,
    )
    assert text_of(kgs).startswith("movies (memory): 43,234 entities, 133,582 triples, 9 relations")


# -- several KGs -----------------------------------------------------------------------------------
async def test_calls_mixing_kgs_are_split_per_kg_and_merged(embedded_kg, mini_kg):
    runtime = Runtime(
        {"movies": embedded_kg, "mini": mini_kg},
        config=parse_config({"linking": {"enabled": False}}),
    )
    async with inprocess_client(runtime) as client:
        linked = await call(client, "initialize", query="[Ada Lovelace] and [Tom Hanks]")
        ids = {
            m["entity"]["label"]: m["entity"]["id"] for m in linked.structured_content["entities"]
        }
        assert ids["Ada Lovelace"].startswith("mini:") and ids["Tom Hanks"] == TOM_HANKS
        rels = await call(client, "get_relations", entity_ids=[ids["Ada Lovelace"], TOM_HANKS])
        only_mini = await call(client, "initialize", query="[Ada Lovelace]", kg="mini")
        cross = await call(
            client, "get_edges", entity_ids=[TOM_HANKS], relation_id="mini:collaborated_with"
        )
    got = {(r["id"], r["direction"]) for r in rels.structured_content["relations"]}
    assert ("mini:collaborated_with", "forward") in got and (
        "movies:starred_actors",
        "backward",
    ) in got
    assert only_mini.structured_content["kgs"] == ["mini"]
    assert all(m["entity"]["kg"] == "mini" for m in only_mini.structured_content["entities"])
    assert (
        not cross.is_error and cross.structured_content["edges"] == []
    )  # unlinked KGs: an empty page says why
    assert "no equivalent in KG 'mini'" in text_of(cross)


async def test_one_failing_kg_gives_a_partial_result_with_a_warning(embedded_kg, mini_kg):
    class Down(MemoryKG):
        async def initialize(self, query, limit=10, named=frozenset()):
            raise BackendError("endpoint unreachable")

    down = Graph(Down("down", mini_kg.store.index))
    async with inprocess_client(Runtime({"movies": embedded_kg, "down": down})) as client:
        result = await call(client, "initialize", query="[Tom Hanks]")
        alone = await call(client, "initialize", query="[Tom Hanks]", kg="down")
    assert not result.is_error
    assert result.structured_content["partial"] is True
    assert result.structured_content["warnings"] == ["KG 'down' failed: endpoint unreachable"]
    assert "warning: KG 'down' failed" in text_of(result)
    assert (
        alone.is_error
        and text_of(alone)
        == "initialize: backend error (may be transient, retry later): endpoint unreachable"
    )


# -- errors ----------------------------------------------------------------------------------------
EDGE_ERRORS = [
    (
        {"entity_ids": ["movies:E99999999"], "relation_id": "movies:starred_actors"},
        "not found: no entity movies:E99999999",
    ),
    (
        {"entity_ids": ["Tom Hanks"], "relation_id": "movies:starred_actors"},
        "invalid input: malformed ID 'Tom Hanks'",
    ),
    (
        {"entity_ids": ["wd:Q42"], "relation_id": "movies:starred_actors"},
        "unknown KG: ID 'wd:Q42' names KG 'wd'",
    ),
    (
        {"entity_ids": [TOM_HANKS], "relation_id": "movies:acted_in"},
        "not found: no relation 'movies:acted_in'",
    ),
    (
        {
            "entity_ids": [f"movies:E{i}" for i in range(1000)],
            "relation_id": "movies:starred_actors",
        },
        "invalid input: 1000 IDs given; at most 50 per call",
    ),
    (
        {"entity_ids": [], "relation_id": "movies:starred_actors"},
        "invalid input: no entity IDs given",
    ),
    (
        {
            "entity_ids": [TOM_HANKS],
            "relation_id": "movies:starred_actors",
            "direction": "sideways",
        },
        "invalid arguments: direction: Input should be 'forward' or 'backward'",
    ),
    (
        {"entity_ids": [TOM_HANKS], "relation_id": "movies:starred_actors", "limit": 0},
        "invalid arguments: limit: Input should be greater than or equal to 1",
    ),
    ({"entity_ids": [TOM_HANKS]}, "invalid arguments: relation_id: Field required"),
    (
        {"entity_ids": ["movies:E1' OR 1=1 --"], "relation_id": "movies:starred_actors"},
        "invalid input: malformed ID",
    ),
    (
        {"entity_ids": ["movies:E1'OR'1'='1"], "relation_id": "movies:starred_actors"},
        "not found: no entity",
    ),
    (
        {"entity_ids": ["movies:E1"], "relation_id": "movies:x> } ; DROP ALL"},
        "invalid input: malformed ID",
    ),
]


@pytest.mark.parametrize(
    "args,message",
    EDGE_ERRORS,
    ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(EDGE_ERRORS)],
)
async def test_bad_get_edges_calls_are_one_line_tool_errors_and_the_server_keeps_serving(
    runtime, args, message
):
    async with inprocess_client(runtime) as client:
        bad = await client.call_tool("get_edges", args)
        good = await call(
            client,
            "get_edges",
            entity_ids=[TOM_HANKS],
            relation_id="movies:starred_actors",
            direction="backward",
            limit=1,
        )
    assert bad.is_error and bad.structured_content is None
    text = text_of(bad)
    assert text.startswith(f"get_edges: {message}"), text
    assert "\n" not in text and "Traceback" not in text
    assert not good.is_error and len(good.structured_content["edges"]) == 1


@pytest.mark.parametrize(
    "tool,args,message",
    [
        ("initialize", {"query": "   "}, "initialize: invalid input: query is empty"),
        (
            "initialize",
            {"query": "x" * 5000},
            "initialize: invalid input: query is 5000 characters; at most 2000",
        ),
        (
            "initialize",
            {"query": "[Tom Hanks]", "kg": "nope"},
            "initialize: unknown KG: no KG named 'nope'",
        ),
        ("search_entities", {"text": ""}, "search_entities: invalid input: query is empty"),
        (
            "get_relations",
            {"entity_ids": ["movies:E-1"]},
            "get_relations: not found: no entity movies:E-1",
        ),
        (
            "describe_entity",
            {"entity_id": "movies:"},
            "describe_entity: invalid input: malformed ID",
        ),
        ("no_such_tool", {}, "Unknown tool: no_such_tool"),
    ],
)
async def test_other_tools_report_bad_input_the_same_way(runtime, tool, args, message):
    async with inprocess_client(runtime) as client:
        result = await client.call_tool(tool, args)
    assert result.is_error and text_of(result).startswith(message), text_of(result)


async def test_injection_looking_queries_are_just_text(runtime):
    async with inprocess_client(runtime) as client:
        for query in [
            '"; DROP TABLE movies; --',
            "SELECT * WHERE { ?s ?p ?o }",
            "{__import__('os')}",
            "\u0000\u202e",
        ]:
            result = await call(client, "initialize", query=query)
            assert not result.is_error
            assert result.structured_content["query"] == query.strip()


async def test_a_bare_id_string_is_accepted_where_a_list_is_expected(runtime):
    async with inprocess_client(runtime) as client:
        result = await client.call_tool("get_relations", {"entity_ids": TOM_HANKS})
    assert not result.is_error and result.structured_content["entity_ids"] == [TOM_HANKS]


async def test_an_unexpected_crash_is_logged_and_reported_generically(embedded_kg, caplog):
    class Crashing(MemoryKG):
        async def relations(self, entity_ids):
            raise RuntimeError("secret internal detail")

    crashing = Graph(Crashing("movies", embedded_kg.store.index))
    async with inprocess_client(Runtime({"movies": crashing})) as client:
        bad = await call(client, "get_relations", entity_ids=[TOM_HANKS])
        good = await call(client, "initialize", query="[Tom Hanks]")
    assert bad.is_error and text_of(bad) == "Error executing tool get_relations"
    assert "secret" not in text_of(bad)
    assert "secret internal detail" in caplog.text
    assert not good.is_error


# -- resources and prompts -------------------------------------------------------------------------
async def test_each_kg_is_a_resource_describing_it(embedded_kg, mini_kg):
    async with inprocess_client(Runtime({"movies": embedded_kg, "mini": mini_kg})) as client:
        resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        content = (await client.read_resource("kg://movies")).contents[0]
    assert set(resources) == {
        "kg://movies",
        "kg://mini",
        "ui://tot-mcp/search-tree",
    }  # + the tree app
    assert resources["kg://movies"].mime_type == "application/json"
    info = json.loads(content.text)
    assert (info["name"], info["backend"], info["triples"]) == ("movies", "memory", 133582)
    assert {r["id"] for r in info["relation_sample"]} >= {
        "movies:starred_actors",
        "movies:directed_by",
    }


async def test_tree_of_traversals_prompt_teaches_the_procedure_for_the_question(runtime):
    async with inprocess_client(runtime) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        result = await client.get_prompt(
            "tree_of_traversals", {"question": "Who directed the films of {Tom Hanks}?"}
        )
    assert [a.name for a in prompts["tree_of_traversals"].arguments] == ["question"]
    text = result.messages[0].content.text
    assert "Question: Who directed the films of {Tom Hanks}?" in text
    for step in ("initialize", "get_relations", "get_edges", "backward", "Backtrack", "movies"):
        assert step in text


async def test_progress_is_reported_per_kg(embedded_kg, mini_kg):
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total))

    async with inprocess_client(Runtime({"movies": embedded_kg, "mini": mini_kg})) as client:
        await client.call_tool(
            "initialize", {"query": "[Tom Hanks]"}, progress_callback=on_progress
        )
    assert sorted(updates) == [(1, 2), (2, 2)]


async def test_tools_are_open_world_when_a_remote_kg_is_served(embedded_kg, mini_kg):
    class Remote(MemoryKG):
        capabilities = Capabilities(backend="sparql", remote=True)

    remote = Graph(Remote("wd", mini_kg.store.index))
    async with inprocess_client(Runtime({"movies": embedded_kg, "wd": remote})) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["get_edges"].annotations.open_world_hint is True
    assert tools["get_edges"].annotations.read_only_hint is True


@pytest.mark.parametrize("llm_table", [{}, {"backend": "openai"}])
async def test_a_tool_that_refuses_names_itself_once(embedded_kg, llm_table):
    """The operator's LLM not opened to clients, or opened without a model: one line that starts
    with the tool's name, not the SDK's 'Error executing tool' nor the name twice."""
    runtime = Runtime(
        {"movies": embedded_kg},
        config=parse_config({"llm": llm_table}),
        environment=Environment({}),
    )
    async with inprocess_client(runtime) as client:
        refused = await call(
            client, "tree_of_traversals", query="who directed [The Matrix]", llm="openai"
        )
    text = text_of(refused)
    assert refused.is_error and text.startswith("tree_of_traversals: ") and "\n" not in text, text
    assert text.count("tree_of_traversals") == 1 and "Error executing" not in text, text


async def test_follow_path_says_the_start_is_not_counted_per_hop(runtime):
    """A walk back through the start reads 0 at that hop without dying: the line says the start is
    left out, and counts it when exclude_start is false."""
    hops = [
        {"relation_id": "starred_actors", "direction": "backward"},
        {"relation_id": "starred_actors"},
    ]
    async with inprocess_client(runtime) as client:
        left_out = await call(client, "follow_path", entity_ids=[TOM_HANKS], hops=hops, limit=1)
        counted = await call(
            client, "follow_path", entity_ids=[TOM_HANKS], hops=hops, limit=1, exclude_start=False
        )
    not_counted = "reached per hop (the start not counted; walks still pass through it): "
    assert not_counted in text_of(left_out)
    assert "reached per hop: " in text_of(counted)
    assert counted.structured_content["reached"][1] == left_out.structured_content["reached"][1] + 1


async def test_a_path_that_reaches_nothing_lists_the_relations_the_start_has(runtime):
    async with inprocess_client(runtime) as client:
        wrong_way = await call(
            client, "follow_path", entity_ids=[TOM_HANKS], hops=[{"relation_id": "starred_actors"}]
        )  # an actor is the object
        relations = await call(client, "get_relations", entity_ids=[TOM_HANKS])
    listed = wrong_way.structured_content["start_relations"]
    real = {f"{r['id']} ({r['direction']})" for r in relations.structured_content["relations"]}
    assert listed and set(listed) <= real and "movies:starred_actors (backward)" in listed
    assert "no targets\nthe start has these relations instead: " in text_of(wrong_way)


async def test_initialize_over_two_kgs_shows_each_relations_direction_and_that_links_are_followed():
    from pathlib import Path

    fixtures = Path(__file__).resolve().parent / "fixtures"
    two = Runtime.open(
        config=parse_config(
            {
                "kgs": {
                    "films": str(fixtures / "local_movies.nt"),
                    "mb": str(fixtures / "linked_mb.ttl"),
                }
            }
        )
    )
    async with inprocess_client(two) as client:
        linked = await call(client, "initialize", query="who directed [The Matrix]")
        kgs = await call(client, "list_kgs")
    examples = kgs.structured_content["examples"]
    listing = linked.structured_content["relations"]
    assert {rid.split(":")[0] for rid in examples} == {"films", "mb"}
    for rid, example in examples.items():  # every relation with its example edge, as in list_kgs
        assert f"({example})" in listing, (rid, listing)
    assert "Relations, by name (subject → object, e.g.): films: " in text_of(linked)
    assert "(get_relations, get_edges and follow_path follow them)" in text_of(kgs)
