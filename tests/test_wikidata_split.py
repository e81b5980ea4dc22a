"""The WDQS graph split served as one: Wikidata's main graph and its scholarly graph as two linked
KGs, end to end.

Since May 2025 the Wikidata Query Service serves scholarly articles from a separate endpoint; an
article's author
(P50) is a Wikidata IRI whose own statements (occupation, employer) are in the main graph.
      ``docs/wikidata-split.md``
(``examples/wikidata-split.toml``) configures the two endpoints as ``[kg.wd]`` and
``[kg.scholarly]`` with a ``[[link]]`` rule between them; this test runs that config shape with the
two endpoints replaced by real ``oxigraph serve`` processes on 127.0.0.1 serving Wikidata-shaped
fixtures (tests/fixtures/wd_split_main.ttl, wd_split_scholarly.ttl), through the real ``tot-mcp``
process and the MCP SDK's stdio client.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from mcp_client import REPO, stdio_session, text_of
from net_helpers import FIXTURES
from oxigraph_fixture import _serve

from tot_mcp.server.cli import read_config
from tot_mcp.server.runtime import Runtime

EXAMPLE = REPO / "examples" / "wikidata-split.toml"
ARTICLE, AUTHOR_SCHOLARLY, AUTHOR_MAIN = (
    "scholarly:Q900000002",
    "scholarly:Q900000001",
    "wd:Q900000001",
)


@pytest.fixture(scope="module")
def main_url(tmp_path_factory):
    """The main graph: the author item with occupation (P106) and employer (P108)."""
    yield from _serve(FIXTURES / "wd_split_main.ttl", tmp_path_factory.mktemp("oxigraph-wd-main"))


@pytest.fixture(scope="module")
def scholarly_url(tmp_path_factory):
    """The scholarly graph: one article whose author (P50) is the main graph's author IRI."""
    yield from _serve(
        FIXTURES / "wd_split_scholarly.ttl", tmp_path_factory.mktemp("oxigraph-wd-scholarly")
    )


def loopback_config(tmp_path: Path, main_url: str, scholarly_url: str) -> str:
    """examples/wikidata-split.toml with the two public endpoints replaced by the loopback servers
    (and the options meant for the public service dropped): the same KG names, the same [[link]]
    rules."""
    example = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert example["kg"]["wd"]["spec"] == "wikidata"
    assert (
        example["kg"]["scholarly"]["spec"] == "wikidata:https://query-scholarly.wikidata.org/sparql"
    )
    links = "".join(
        "\n[[link]]\n" + "".join(f'{key} = "{value}"\n' for key, value in rule.items())
        for rule in example["link"]
    )
    path = tmp_path / "wikidata-split.toml"
    path.write_text(
        f'[kg.wd]\nspec = "wikidata:{main_url}"\n\n[kg.scholarly]\nspec = '
        f'"wikidata:{scholarly_url}"\nlabel_search = "exact"\n{links}',
        encoding="utf-8",
    )
    return str(path)


async def call(session, tool: str, **args) -> dict:
    result = await session.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return result.structured_content


async def test_the_example_config_opens_as_two_linked_kgs():
    """The shipped example loads as is: two Wikidata-profile KGs and the IRI link between them
    (opening a SPARQL KG contacts nothing, so this runs offline; `tot-mcp --check` would query both
    public endpoints)."""
    runtime = Runtime.open(config=read_config(EXAMPLE))
    try:
        assert {name: kg.backend for name, kg in runtime.kgs.items()} == {
            "wd": "wikidata",
            "scholarly": "wikidata",
        }
        assert [r.describe() for r in runtime.graph.linker.rules] == ["scholarly↔wd by iri"]
    finally:
        await runtime.aclose()


async def test_from_a_scholarly_article_to_its_authors_main_graph_statements(
    tmp_path, main_url, scholarly_url
):
    """From the article (found in the scholarly KG), get_edges along P50 reaches its author; the
    author's get_relations lists the main graph's relations too (occupation, employer), and
    get_edges with the main graph's P106 follows them from the same item there, `via` the author
    asked about: the two graphs answer as one."""
    async with stdio_session(
        ["--config", loopback_config(tmp_path, main_url, scholarly_url)]
    ) as session:
        found = await call(session, "initialize", query="[Linking split knowledge graphs]")
        authors = await call(
            session, "get_edges", entity_ids=[ARTICLE], relation_id="scholarly:P50"
        )
        relations = await call(session, "get_relations", entity_ids=[AUTHOR_SCHOLARLY])
        occupation = await call(
            session, "get_edges", entity_ids=[AUTHOR_SCHOLARLY], relation_id="wd:P106"
        )
        employer = await session.call_tool(
            "follow_path",
            {
                "entity_ids": [ARTICLE],
                "hops": [
                    {"relation_id": "scholarly:P50", "direction": "forward"},
                    {"relation_id": "wd:P108", "direction": "forward"},
                ],
            },
        )
        described = await call(session, "describe_entity", entity_id=AUTHOR_MAIN)

    assert found["kgs"] == ["wd", "scholarly"]
    assert [m["entity"]["id"] for m in found["entities"]] == [ARTICLE]

    # the scholarly graph has no label for the author (as live): the link is by IRI, not by name
    assert [e["target"] for e in authors["edges"]] == [AUTHOR_SCHOLARLY]

    by_kg: dict[str, set[str]] = {}
    for r in relations["relations"]:
        by_kg.setdefault(r["kg"], set()).add(r["id"])
    assert {"wd:P106", "wd:P108", "wd:P31"} <= by_kg["wd"]
    assert "scholarly:P50" in by_kg["scholarly"]  # backward: what she wrote

    assert [
        (e["via"], e["source"], occupation["entities"][e["target"]]["label"])
        for e in occupation["edges"]
    ] == [(AUTHOR_SCHOLARLY, AUTHOR_MAIN, "scientist")]
    assert not occupation["warnings"] and not occupation["partial"]

    assert not employer.is_error and "Massachusetts Institute of Technology" in text_of(employer), (
        text_of(employer)
    )
    assert (
        described["same_as"] == [AUTHOR_SCHOLARLY] and described["entity"]["label"] == "Ada Scholar"
    )
