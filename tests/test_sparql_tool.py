"""``sparql_query`` end to end: the real ``tot-mcp`` process over stdio, the SDK's client, a real
``oxigraph serve`` with Wikidata-shaped data (tests/fixtures/wikidata_sample.ttl) — plus in-process
checks of the per-KG switch, the on-disk store backend, the character cap and the timeout. No
network beyond 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from mcp_client import inprocess_client, stdio_session, text_of
from net_helpers import FIXTURES

from tot_mcp.strategies.settings import parse_config
from tot_mcp.kg_adapters.errors import BackendTimeout, InvalidInput
from tot_mcp.kg_adapters.oxigraph_store import OxigraphKG, load_into_store
from tot_mcp.kg_adapters.sparql import EndpointRegistry, open_sparql_kg
from tot_mcp.kg_adapters.spec import make_spec
from tot_mcp.server.runtime import Runtime

pytest_plugins = ["oxigraph_fixture"]

PEOPLE = (
    "SELECT ?person ?name WHERE { ?person wdt:P31 wd:Q5 ; rdfs:label ?name . FILTER(LANG(?name) = "
    "'en') } ORDER BY ?name LIMIT 3"
)
HUGE = "SELECT * WHERE { " + "?s <http://example.org/p> ?o . " * 3500 + "}"  # 108 kB


def one_line_error(result, *needles: str) -> str:
    text = text_of(result)
    assert result.is_error, text
    assert "\n" not in text and text.startswith("sparql_query: "), text
    for needle in needles:
        assert needle in text, text
    return text


async def test_over_the_real_server_reads_work_and_everything_else_is_one_clear_line(
    wikidata_sparql_url,
):
    async with stdio_session(["--kg", f"wd=wikidata:{wikidata_sparql_url}"]) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        people = await session.call_tool("sparql_query", {"query": PEOPLE})
        update = await session.call_tool(
            "sparql_query", {"query": "INSERT DATA { wd:Q42 wdt:P26 wd:Q5 }"}
        )
        service = await session.call_tool(
            "sparql_query",
            {"query": "SELECT * { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"},
        )
        everything = await session.call_tool(
            "sparql_query", {"query": "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"}
        )
        empty = await session.call_tool("sparql_query", {"query": ""})
        huge = await session.call_tool("sparql_query", {"query": HUGE})
        broken = await session.call_tool("sparql_query", {"query": "SELECT * WHERE { ?s ?p ?o"})
        ask = await session.call_tool(
            "sparql_query", {"query": "ASK { wd:Q42 wdt:P26 wd:Q14623681 }"}
        )
        after = await session.call_tool("sparql_query", {"query": PEOPLE})  # still serving

    tool = tools["sparql_query"]
    assert (
        tool.annotations.read_only_hint
        and tool.input_schema["properties"]["query"]["maxLength"] == 10000
    )

    assert not people.is_error
    assert text_of(people) == (
        "SELECT on wd (prefixes declared for you: wdt:, wd:, rdfs:): 3 rows\n"
        "?person | ?name\n"
        'wd:Q937 | "Albert Einstein"@en\n'
        'wd:Q1035 | "Charles Darwin"@en\n'
        'wd:Q42 | "Douglas Adams"@en'
    )
    rows = people.structured_content["rows"]
    assert rows[2] == {
        "person": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"},
        "name": {"type": "literal", "value": "Douglas Adams", "lang": "en"},
    }
    assert people.structured_content["prefixes"]["wdt"] == "http://www.wikidata.org/prop/direct/"
    assert people.structured_content["query"].endswith("ORDER BY ?name LIMIT 3")
    assert text_of(after) == text_of(people)

    one_line_error(update, "refused: updates are not allowed (found INSERT)")
    one_line_error(service, "refused: SERVICE (federated query) is not allowed")
    one_line_error(empty, "refused: the query is empty")
    one_line_error(huge, f"refused: the query is {len(HUGE):,} characters; at most 10,000")
    one_line_error(broken, "refused: not a valid SPARQL query")

    assert not everything.is_error
    lines = text_of(everything).splitlines()
    assert lines[0] == "SELECT on wd: 100 rows (truncated)" and lines[1] == "?s | ?p | ?o"
    assert "note: LIMIT 100 added" in lines
    assert lines[-1].startswith("(truncated: more than 100 results: narrow the query")
    assert (
        len(everything.structured_content["rows"]) == 100
        and everything.structured_content["truncated"]
    )
    assert everything.structured_content["limit"] == 101

    assert text_of(ask) == "ASK on wd (prefixes declared for you: wd:, wdt:): true"


async def test_a_long_answer_is_cut_in_characters_in_text_and_rows_alike(wikidata_sparql_url):
    rt = Runtime.open([make_spec("wd", f"wikidata:{wikidata_sparql_url}")])
    long = (
        "SELECT ?s (CONCAT(STR(?s), STR(?p), STR(?o), STR(?s), STR(?p), STR(?o)) AS ?long) "
        "WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o"
    )
    async with inprocess_client(rt) as client:
        result = await client.call_tool("sparql_query", {"query": long})
    text = text_of(result)
    shown = len(text.splitlines()) - 4  # heading, header, note, truncation line
    assert not result.is_error and len(text) < 8600
    assert (
        result.structured_content["truncated"]
        and len(result.structured_content["rows"]) == shown < 100
    )
    assert "answer was cut at 8,000 characters" in text and f"({shown} of 100 rows shown)" in text


async def test_the_switch_in_the_config_turns_it_off_per_kg(wikidata_sparql_url, tmp_path):
    config = parse_config(
        {
            "kg": {
                "wd": {"spec": f"wikidata:{wikidata_sparql_url}", "sparql_query": False},
                "open": {"spec": f"sparql:{wikidata_sparql_url}"},
            }
        }
    )
    rt = Runtime.open(config=config)
    assert not rt.kgs["wd"].capabilities.sparql and rt.kgs["open"].capabilities.sparql
    async with inprocess_client(rt) as client:
        off = await client.call_tool("sparql_query", {"query": "ASK { ?s ?p ?o }", "kg": "wd"})
        on = await client.call_tool("sparql_query", {"query": "ASK { ?s ?p ?o }", "kg": "open"})
    one_line_error(off, "KG 'wd' (wikidata) does not answer SPARQL queries; these do: open")
    assert text_of(on) == "ASK on open: true"
    with pytest.raises(InvalidInput, match="kg.wd.sparql_query: expected true or false, got 'no'"):
        parse_config({"kg": {"wd": {"spec": "wikidata", "sparql_query": "no"}}})
    alone = Runtime.open(
        config=parse_config(
            {"kg": {"wd": {"spec": f"wikidata:{wikidata_sparql_url}", "sparql_query": False}}}
        )
    )
    async with inprocess_client(
        alone
    ) as client:  # no KG answers SPARQL: the tool is not offered at all
        assert "sparql_query" not in {t.name for t in (await client.list_tools()).tools}


async def test_an_on_disk_store_answers_through_the_same_guard(tmp_path):
    load_into_store(FIXTURES / "wikidata_sample.ttl", tmp_path / "store").flush()
    rt = Runtime.open([make_spec("w", f"store:{tmp_path / 'store'}")])
    async with inprocess_client(rt) as client:
        people = await client.call_tool("sparql_query", {"query": PEOPLE})
        meta = await client.call_tool(
            "sparql_query",
            {"query": "SELECT * { ?s ?p ?o FILTER(STRSTARTS(STR(?p), 'urn:tot:meta')) }"},
        )
        load = await client.call_tool("sparql_query", {"query": "LOAD <http://127.0.0.1:9/x.ttl>"})
    assert text_of(people).splitlines()[1:] == [
        "?person | ?name",
        'wd:Q937 | "Albert Einstein"@en',
        'wd:Q1035 | "Charles Darwin"@en',
        'wd:Q42 | "Douglas Adams"@en',
    ]
    assert text_of(meta).startswith(
        "SELECT on w: no results"
    )  # the store's own metadata graph stays private
    one_line_error(load, "refused: updates are not allowed (found LOAD)")


async def test_a_store_kg_refuses_when_switched_off_and_memory_kgs_never_answer(embedded_kg):
    store = OxigraphKG("w", load_into_store(FIXTURES / "wikidata_sample.ttl", None))
    assert (await store.sparql_query("ASK { ?s ?p ?o }")).boolean is True
    with pytest.raises(InvalidInput, match="does not answer SPARQL"):
        await embedded_kg.sparql_query("ASK { ?s ?p ?o }")
    async with inprocess_client(Runtime({"movies": embedded_kg})) as client:
        assert "sparql_query" not in {t.name for t in (await client.list_tools()).tools}


async def test_the_endpoint_timeout_applies_once_without_retrying():
    calls = []

    async def slow(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.params.get("query"))
        await asyncio.sleep(5)
        return httpx.Response(200, content=json.dumps({"boolean": True}).encode())

    kg = open_sparql_kg(
        "wd",
        "wikidata",
        "http://slow.invalid/sparql",
        registry=EndpointRegistry(),
        transport=httpx.MockTransport(slow),
        retries=2,
        backoff=0,
    )
    loop_start = asyncio.get_running_loop().time()
    with pytest.raises(BackendTimeout, match="no answer within 0.3 s"):
        await kg.sparql_query("ASK { ?s ?p ?o }", timeout=0.3)
    assert len(calls) == 1 and asyncio.get_running_loop().time() - loop_start < 2


# -- large vocabularies: get_relations(search=...), search_entities(relation=...) ------------------
async def test_relations_are_found_by_meaning_and_external_ids_resolve(values_url):
    async with stdio_session(["--kg", f"wd=wikidata:{values_url}"]) as session:
        married = await session.call_tool("get_relations", {"search": "married to"})
        born = await session.call_tool("get_relations", {"search": "when was someone born"})
        imdb = await session.call_tool("get_relations", {"search": "IMDb"})
        film = await session.call_tool(
            "search_entities", {"relation": "wd:P345", "text": "tt1375666"}
        )
        nothing = await session.call_tool(
            "search_entities", {"relation": "wd:P345", "text": "tt0000000"}
        )
        no_such = await session.call_tool(
            "search_entities", {"relation": "wd:P99999", "text": "tt1375666"}
        )
        both = await session.call_tool(
            "get_relations", {"search": "IMDb", "entity_ids": ["wd:Q25188"]}
        )
    assert text_of(married).splitlines()[:2] == [
        "Relations matching 'married to':",
        'wd:P26: spouse - the subject has the object as their spouse  (matched "married to")',
    ]
    assert married.structured_content["matches"][0]["aliases"] == ["husband", "married to", "wife"]
    assert born.structured_content["matches"][0]["id"] == "wd:P569"
    assert text_of(imdb).splitlines()[1] == "wd:P345: IMDb ID - identifier for the IMDb database"
    assert text_of(film).splitlines()[:2] == [
        "Entities with wd:P345 = 'tt1375666':",
        "wd:Q25188: Inception - 2010 film directed by Christopher Nolan  [identifier 1.00]",
    ]
    assert film.structured_content["entities"][0]["entity"]["id"] == "wd:Q25188"
    assert (
        not nothing.is_error
        and text_of(nothing) == "no entity in KG 'wd' has wd:P345 = 'tt0000000'"
    )
    for bad, needle in (
        (no_such, "not found: no relation 'wd:P99999' in KG 'wd'"),
        (both, "not both"),
    ):
        assert bad.is_error and "\n" not in text_of(bad) and needle in text_of(bad), text_of(bad)


async def test_local_kgs_are_searched_over_their_relation_labels(embedded_kg, wikidata_sparql_url):
    rt = Runtime(
        {
            "movies": embedded_kg,
            **Runtime.open([make_spec("wd", f"wikidata:{wikidata_sparql_url}")]).kgs,
        }
    )
    async with inprocess_client(rt) as client:
        director = await client.call_tool("get_relations", {"search": "director", "kg": "movies"})
        year = await client.call_tool(
            "search_entities", {"relation": "movies:release_year", "text": "1994", "limit": 5}
        )
        wrong = await client.call_tool(
            "search_entities", {"relation": "movies:released", "text": "1994"}
        )
    top = director.structured_content["matches"][0]
    assert (top["id"], top["label"]) == ("movies:directed_by", "directed by") and top[
        "count"
    ] > 10_000
    assert (
        not year.is_error
        and len(year.structured_content["entities"]) == 5
        and year.structured_content["result_id"]
    )
    assert wrong.is_error and "no relation 'movies:released' in KG 'movies'" in text_of(wrong), (
        text_of(wrong)
    )


async def test_an_rdf_file_in_memory_answers_from_the_file_loaded_on_first_query():
    from tot_mcp.kg_adapters.rdf_file import RdfFileKG, load_rdf_file

    path = FIXTURES / "local_movies.nt.gz"
    kg = RdfFileKG("m", load_rdf_file(path), source=path)
    assert kg.capabilities.sparql and kg.capabilities.local_index
    with pytest.raises(InvalidInput, match="refused: updates are not allowed"):
        await kg.sparql_query("CLEAR ALL")
    assert not (kg._workers and kg._workers.pids)  # a refused query starts (and loads) nothing
    films = await kg.sparql_query(
        "SELECT ?film WHERE { ?film <http://example.org/movies/directedBy> ?d }", limit=2
    )
    assert len(films.rows) == 2 and films.truncated and films.query.endswith("LIMIT 3")
    hidden = await kg.sparql_query("ASK { GRAPH <urn:tot:meta> { ?s ?p ?o } }")
    assert hidden.boolean is False  # the loader's metadata graph is not visible
    await kg.aclose()


async def test_an_rdf_file_served_by_tot_mcp_answers_sparql_query():
    """``--kg m=FILE.ttl`` (held in memory) offers the tool: the file KG is an RdfFileKG, not a
    plain MemoryKG."""
    path = FIXTURES / "local_movies.nt.gz"
    async with stdio_session(["--kg", f"m={path}"]) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "sparql_query" in names
        result = await session.call_tool(
            "sparql_query",
            {
                "query": (
                    "SELECT ?film WHERE { ?film <http://example.org/movies/directedBy> ?d } ORDER "
                    "BY ?film"
                ),
                "kg": "m",
            },
        )
        assert not result.is_error, text_of(result)
        assert result.structured_content["rows"]


async def test_list_kgs_says_what_a_sparql_endpoint_did_not_count(wikidata_sparql_url):
    remote = Runtime.open(config=parse_config({"kgs": {"wd": f"wikidata:{wikidata_sparql_url}"}}))
    async with inprocess_client(remote) as client:
        kgs = await client.call_tool("list_kgs", {})
    info = kgs.structured_content["kgs"][0]
    first = text_of(kgs).splitlines()[0]
    assert info["entities"] is None and "?" not in first  # no "? entities": the text says why
    assert first == "wd (wikidata): size not counted (too costly to ask a remote endpoint)"
