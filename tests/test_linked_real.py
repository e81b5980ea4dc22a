"""Several KGs served at once and linked, end to end: the real ``tot-mcp`` process over stdio,
driven by the MCP SDK's client, with every SPARQL endpoint a real ``oxigraph serve`` on 127.0.0.1
(no mocks, no network beyond loopback).

* two plain-RDF endpoints linked by ``owl:sameAs`` (a ``[[link]] kind = "same_as"`` rule);
* a Wikidata-shaped endpoint linked to a local IMDb-shaped file by the IMDb ID property P345
  (``[[link]] kind = "property"``, the value put into the IMDb title URL);
* the embedded movie KG linked to a Wikidata-shaped endpoint by label (no ``[[link]]`` rule: the
  default);
* a ``[[link]]`` rule naming an unknown KG or a relation the KG lacks stops ``tot-mcp`` at start-up.

Fixtures: linked_real_dbpedia.ttl + linked_real_people.ttl (sameAs), linked_real_wd.ttl
(Wikidata-shaped: The Matrix with P345, Forrest Gump), linked_real_imdb.ttl (IMDb-shaped local
file).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp_client import REPO, SERVER_CMD, server_env, stdio_session, text_of
from net_helpers import FIXTURES
from oxigraph_fixture import _serve

IMDB_FILE = FIXTURES / "linked_real_imdb.ttl"
IMDB_TITLE = "http://www.imdb.com/title/{value}/"

# case 1: sameAs between two plain-RDF endpoints (IDs are <prefix>.<localname> with the prefixes
# configured below)
ADA_A, ADA_B = "a:dbr.Ada_Lovelace", "b:people.Ada_Lovelace"
# case 2 and 3: the Wikidata-shaped endpoint
MATRIX_WD, FORREST_GUMP_WD = "wd:Q83495", "wd:Q134773"


# -- servers and helpers ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dbpedia_url(tmp_path_factory):
    """Plain RDF, DBpedia-shaped: Ada Lovelace owl:sameAs the people endpoint's Ada Lovelace."""
    yield from _serve(
        FIXTURES / "linked_real_dbpedia.ttl", tmp_path_factory.mktemp("oxigraph-dbpedia")
    )


@pytest.fixture(scope="module")
def people_url(tmp_path_factory):
    """Plain RDF with its own IRIs and vocabulary (http://example.org/people/, /relations/)."""
    yield from _serve(
        FIXTURES / "linked_real_people.ttl", tmp_path_factory.mktemp("oxigraph-people")
    )


@pytest.fixture(scope="module")
def wd_url(tmp_path_factory):
    """Wikidata-shaped: The Matrix (P345 tt0133093) and Forrest Gump (labelled as in the embedded
    KG)."""
    yield from _serve(
        FIXTURES / "linked_real_wd.ttl", tmp_path_factory.mktemp("oxigraph-linked-wd")
    )


def write_config(tmp_path: Path, toml: str) -> str:
    path = tmp_path / "tot-mcp.toml"
    path.write_text(toml, encoding="utf-8")
    return str(path)


async def call(session, tool: str, **args) -> dict:
    """The structured result of a tool call that must succeed."""
    result = await session.call_tool(tool, args)
    assert not result.is_error, text_of(result)
    return result.structured_content


def relations_by_kg(result: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in result["relations"]:
        out.setdefault(r["kg"], set()).add(r["id"])
    return out


def edges_seen(page: dict) -> set[tuple[str | None, str, str]]:
    """(via, source, target label) of every edge of a get_edges page."""
    return {(e["via"], e["source"], page["entities"][e["target"]]["label"]) for e in page["edges"]}


def imdb_config(tmp_path: Path) -> str:
    return write_config(
        tmp_path,
        f"""
[[link]]
from_kg = "wd"
to_kg = "imdb"
kind = "property"
relation = "P345"
template = "{IMDB_TITLE}"
""",
    )


async def imdb_matrix(session) -> str:
    """The Matrix's ID in the local IMDb file."""
    hits = (await call(session, "search_entities", text="The Matrix", kg="imdb"))["entities"]
    assert hits[0]["entity"]["label"] == "The Matrix"
    return hits[0]["entity"]["id"]


# -- 1. two SPARQL endpoints linked by owl:sameAs --------------------------------------------------
async def test_two_sparql_endpoints_linked_by_same_as_answer_as_one(
    tmp_path, dbpedia_url, people_url
):
    """With a same_as rule between two endpoints, initialize lists Ada Lovelace once (same_as: her
    IRI on the other endpoint), get_relations lists the relations of both endpoints, and get_edges
    with the other endpoint's relation follows the edges there, from her equivalent, naming the
    entity asked about in `via` (both ways). Only the rule links: Charles Babbage, labelled alike on
    both endpoints but without a sameAs, stays two entities."""
    config = write_config(
        tmp_path,
        f"""
[kg.a]
spec = "sparql:{dbpedia_url}"
[kg.b]
spec = "sparql:{people_url}"
prefixes = {{ people = "http://example.org/people/", rel = "http://example.org/relations/" }}

[[link]]
from_kg = "a"
to_kg = "b"
kind = "same_as"
""",
    )
    async with stdio_session(["--config", config]) as session:
        ada = await call(session, "initialize", query="[Ada Lovelace]")
        babbage = await call(session, "initialize", query="[Charles Babbage]")
        described = await call(session, "describe_entity", entity_id=ADA_B)
        relations = await call(session, "get_relations", entity_ids=[ADA_A])
        parent = await call(session, "get_edges", entity_ids=[ADA_A], relation_id="b:rel.parent")
        born = await call(session, "get_edges", entity_ids=[ADA_B], relation_id="a:dbo.birthPlace")

    assert ada["kgs"] == ["a", "b"] and not ada["partial"]
    assert [(m["entity"]["id"], m["same_as"]) for m in ada["entities"]] == [(ADA_A, [ADA_B])]
    assert described["same_as"] == [ADA_A]  # found backward: b's entity is the object of a's sameAs
    assert [(m["entity"]["id"], m["same_as"]) for m in babbage["entities"]] == [
        ("a:dbr.Charles_Babbage", []),
        ("b:people.Charles_Babbage", []),
    ]

    by_kg = relations_by_kg(relations)
    assert {"a:dbo.birthPlace", "a:owl.sameAs"} <= by_kg["a"]
    assert by_kg["b"] == {"b:rel.parent", "b:rel.collaborator"}

    assert edges_seen(parent) == {(ADA_A, ADA_B, "Lord Byron")}
    assert not parent["warnings"] and not parent["partial"]
    assert edges_seen(born) == {(ADA_B, ADA_A, "London")}


# -- 2. a Wikidata-shaped endpoint linked to a local file by an external ID (P345) -----------------
async def test_a_wikidata_item_reaches_the_local_file_through_its_imdb_id(tmp_path, wd_url):
    """A property rule on P345 (value → http://www.imdb.com/title/{value}/) links the Wikidata item
    to the local file's title: initialize lists The Matrix once with same_as its IMDb-file ID,
    get_relations on the item lists the file's relations too, and get_edges with a file relation
    follows them from the title, `via` the item. An item whose IMDb ID names no title in the file
    (Forrest Gump) gets an empty page with a one-line warning, not an error."""
    async with stdio_session(
        [
            "--config",
            imdb_config(tmp_path),
            "--kg",
            f"wd=wikidata:{wd_url}",
            "--kg",
            f"imdb={IMDB_FILE}",
        ]
    ) as session:
        title = await imdb_matrix(session)
        linked = await call(session, "initialize", query="[The Matrix]")
        relations = await call(session, "get_relations", entity_ids=[MATRIX_WD])
        actors = await call(session, "get_edges", entity_ids=[MATRIX_WD], relation_id="imdb:actor")
        unlinked = await session.call_tool(
            "get_edges", {"entity_ids": [FORREST_GUMP_WD], "relation_id": "imdb:actor"}
        )

    assert [(m["entity"]["id"], m["same_as"]) for m in linked["entities"]] == [(MATRIX_WD, [title])]
    by_kg = relations_by_kg(relations)
    assert {"wd:P345", "wd:P136"} <= by_kg["wd"] and by_kg["imdb"] == {
        "imdb:actor",
        "imdb:contentRating",
    }
    assert edges_seen(actors) == {
        (MATRIX_WD, title, "Keanu Reeves"),
        (MATRIX_WD, title, "Laurence Fishburne"),
    }

    assert not unlinked.is_error
    assert unlinked.structured_content["edges"] == []
    (warning,) = unlinked.structured_content["warnings"]
    assert "\n" not in warning and FORREST_GUMP_WD in warning and "'imdb'" in warning


async def test_the_local_title_reaches_the_wikidata_item_the_other_way(tmp_path, wd_url):
    """Link rules work both ways: from the local file's title, describe_entity shows the Wikidata
    item as same_as and get_edges with a Wikidata relation follows it from the item (the one whose
    P345 value names the title), `via` the title."""
    async with stdio_session(
        [
            "--config",
            imdb_config(tmp_path),
            "--kg",
            f"wd=wikidata:{wd_url}",
            "--kg",
            f"imdb={IMDB_FILE}",
        ]
    ) as session:
        title = await imdb_matrix(session)
        genre = await call(session, "get_edges", entity_ids=[title], relation_id="wd:P136")
        described = await call(session, "describe_entity", entity_id=title)

    assert edges_seen(genre) == {(title, MATRIX_WD, "science fiction")}
    assert described["same_as"] == [MATRIX_WD]


# -- 3. the embedded movie KG linked to a Wikidata-shaped endpoint by label (the default) ----------
async def test_the_embedded_movie_kg_links_to_a_wikidata_endpoint_by_label(wd_url):
    """With no [[link]] rule, the two KGs link by label: initialize("[Forrest Gump]") lists the film
    once (the embedded KG's, same_as the Wikidata item), get_relations on the movie lists the item's
    wd relations beside its own, and get_edges follows a wd relation from the movie (and a movies
    relation from the item), `via` the entity asked about."""
    async with stdio_session(
        ["--kg", "movies=embedded", "--kg", f"wd=wikidata:{wd_url}"]
    ) as session:
        linked = await call(session, "initialize", query="[Forrest Gump]")
        films = [m for m in linked["entities"] if m["entity"]["label"] == "Forrest Gump"]
        assert len(films) == 1, linked["entities"]
        movie = films[0]["entity"]["id"]
        relations = await call(session, "get_relations", entity_ids=[movie])
        director = await call(session, "get_edges", entity_ids=[movie], relation_id="wd:P57")
        starring = await call(
            session, "get_edges", entity_ids=[FORREST_GUMP_WD], relation_id="movies:starred_actors"
        )

    assert movie.startswith("movies:") and films[0]["same_as"] == [FORREST_GUMP_WD]
    assert FORREST_GUMP_WD not in {m["entity"]["id"] for m in linked["entities"]}
    by_kg = relations_by_kg(relations)
    assert {"movies:directed_by", "movies:starred_actors"} <= by_kg["movies"]
    assert {"wd:P57", "wd:P136", "wd:P166", "wd:P345"} <= by_kg["wd"]
    assert edges_seen(director) == {(movie, FORREST_GUMP_WD, "Robert Zemeckis")}
    assert {"Tom Hanks", "Sally Field"} <= {label for _, _, label in edges_seen(starring)}
    assert {(via, source) for via, source, _ in edges_seen(starring)} == {(FORREST_GUMP_WD, movie)}


# -- start-up: a bad [[link]] rule -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            'from_kg = "imdb"\nto_kg = "wd"\nkind = "label"',
            "link rule imdb↔wd by label names KG 'wd', which is not configured (configured: imdb, "
            "movies)",
        ),
        (
            'from_kg = "imdb"\nto_kg = "movies"\nkind = "property"\nrelation = "P345"',
            "link rule imdb↔movies by property (P345): KG 'imdb' has no relation 'P345'",
        ),
    ],
    ids=["unknown-kg", "unknown-relation"],
)
def test_a_link_rule_naming_an_unknown_kg_or_relation_stops_the_server_at_start_up(
    tmp_path, rule, message
):
    """`tot-mcp --check` with a [[link]] rule naming a KG that is not configured, or (for a local
    file KG, whose relations are known without I/O) a relation that KG does not have, exits with
    code 2 and one line on stderr."""
    config = write_config(tmp_path, f"[[link]]\n{rule}\n")
    result = subprocess.run(
        [
            *SERVER_CMD,
            "--check",
            "--config",
            config,
            "--kg",
            f"imdb={IMDB_FILE}",
            "--kg",
            f"movies={FIXTURES / 'local_movies.ttl'}",
        ],
        cwd=REPO,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"tot-mcp: error: {message}\n"
