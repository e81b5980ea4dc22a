"""bench/linked3.py on a tiny synthetic KB (not the real one): the three generated KGs and the
config are well-formed, the question slices follow the qtype, and the identifier rule links films
and catalog both ways, so that a cast film is one node in all three KGs. No benchmark is run; the
endpoint part skips without ``oxigraph``."""

from __future__ import annotations

import re
import shutil

import pytest
import rdflib

from bench import linked3

KB = """Alpha|directed_by|Eli Fox
Alpha|written_by|Ann Lee
Alpha|starred_actors|Cy Park
Alpha|release_year|1999
Alpha|release_year|2004
Alpha|has_genre|Thriller
Alpha|has_tags|noir
Alpha|in_language|English
Beta|directed_by|Eli Fox
Beta|starred_actors|Cy Park
Beta|has_genre|Horror
Beta|has_imdb_votes|famous
Beta|has_imdb_rating|good
Gamma "G" \\ 2|directed_by|Ann Lee
Gamma "G" \\ 2|starred_actors|Dee Lane
Gamma "G" \\ 2|release_year|2010
Gamma "G" \\ 2|has_genre|Thriller
Delta|starred_actors|Dee Lane
Delta|release_year|1987
"""
FILMS = ["Alpha", "Beta", 'Gamma "G" \\ 2', "Delta"]
CAT = rdflib.Namespace(linked3.CAT)


@pytest.fixture
def kb(tmp_path):
    path = tmp_path / "kb.txt"
    path.write_text(KB, encoding="utf-8")
    return path


def _lines(path):
    return [tuple(line.split("|")) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_three_files_split_the_kb_and_share_only_the_identifier(kb, tmp_path):
    out = tmp_path / "data"
    rep = linked3.write_data(kb, out)
    assert rep.films == 4 and rep.without_year == 1

    films = _lines(out / "films.txt")
    assert {r for _, r, _ in films} == {"directed_by", "written_by", "imdb_id"}
    ids = {h: t for h, r, t in films if r == "imdb_id"}
    assert (
        list(ids) == FILMS
    )  # one per film, in order of first appearance, labels exactly as in kb.txt
    assert all(re.fullmatch(r"tt\d{7}", v) for v in ids.values()) and len(set(ids.values())) == 4
    assert ids["Alpha"] == linked3.imdb_id(0) and ids["Delta"] == linked3.imdb_id(3)
    assert _lines(out / "cast.txt") == [
        tuple(line.split("|")) for line in KB.splitlines() if "|starred_actors|" in line
    ]

    g = rdflib.Graph().parse(out / "catalog.ttl", format="turtle")
    label = rdflib.RDFS.label
    by_imdb = {str(o): s for s, o in g.subject_objects(CAT.imdb)}
    assert set(by_imdb) == set(ids.values())
    titles = {f: str(g.value(by_imdb[ids[f]], label)) for f in FILMS}
    # "Title (Year)", the first year when there are several, the title alone when there is none
    assert titles == {
        "Alpha": "Alpha (1999)",
        "Beta": "Beta",
        'Gamma "G" \\ 2': 'Gamma "G" \\ 2 (2010)',
        "Delta": "Delta (1987)",
    }
    alpha = by_imdb[ids["Alpha"]]
    assert sorted(str(o) for o in g.objects(alpha, CAT.releaseYear)) == ["1999", "2004"]
    assert {str(g.value(o, label)) for o in g.objects(alpha, CAT.genre)} == {"Thriller"}
    assert {str(g.value(o, label)) for o in g.objects(alpha, CAT.tag)} == {"noir"}
    assert {str(g.value(o, label)) for o in g.objects(alpha, CAT.language)} == {"English"}
    beta = by_imdb[ids["Beta"]]
    assert (
        str(g.value(beta, CAT.imdbVotes)) == "famous"
        and str(g.value(beta, CAT.imdbRating)) == "good"
    )
    # one Thriller node shared by two films; every predicate and every non-literal object has a
    # label
    assert len(set(g.objects(None, CAT.genre))) == 2
    preds = {p for p in g.predicates() if p != label}
    assert all(g.value(p, label) for p in preds)
    assert str(g.value(CAT.imdb, label)) == "IMDb ID"
    assert all(
        g.value(o, label) for p in preds for o in g.objects(None, p) if isinstance(o, rdflib.URIRef)
    )
    # nothing of the cast and nothing of films but the identifier
    assert not {t for _, r, t in films if r != "imdb_id"} & {str(o) for o in g.objects()}


@pytest.mark.parametrize(
    "qtype, slice_",
    [
        ("director_to_movie_to_year", "films→catalog"),
        ("movie_to_writer_to_movie_to_genre", "films→catalog"),
        ("actor_to_movie_to_genre", "cast→films→catalog"),
        ("movie_to_actor_to_movie_to_language", "cast→films→catalog"),
        ("actor_to_movie_to_director", "cast↔films"),
        ("movie_to_director_to_movie_to_actor", "cast↔films"),
        ("movie_to_actor_to_movie", None),  # the cast alone
        ("writer_to_movie_to_director", None),  # films alone
    ],
)
def test_slices_follow_the_kgs_the_qtype_touches(qtype, slice_):
    assert linked3.slice_of(qtype) == slice_


def test_slices_are_written_from_dev_files_in_metaqa_format(tmp_path):
    metaqa = tmp_path / "metaqa"
    (metaqa / "2-hop").mkdir(parents=True)
    (metaqa / "2-hop" / "qa_dev_sample.txt").write_text(
        "what genres are the films [Cy Park] starred in\tThriller|Horror\nwho directed the films "
        "[Cy Park] starred in\tEli Fox\nwho else starred with [Cy Park]\tDee Lane\n",
        encoding="utf-8",
    )
    (metaqa / "2-hop" / "qa_dev_sample_qtype.txt").write_text(
        "actor_to_movie_to_genre\nactor_to_movie_to_director\nactor_to_movie_to_actor\n",
        encoding="utf-8",
    )
    paths = linked3.write_slices(metaqa, 2, tmp_path / "q")
    assert paths["cast→films→catalog"].read_text(encoding="utf-8").startswith("what genres")
    assert (
        paths["cast↔films"].with_name("dev_2hop_cast-films_qtype.txt").read_text()
        == "actor_to_movie_to_director\n"
    )
    assert paths["films→catalog"].read_text(encoding="utf-8") == ""


def test_work_dir_inside_the_repository_is_refused():
    with pytest.raises(SystemExit):
        linked3.main(["--work", str(linked3.REPO / "bench" / "data"), "--build-only"])


@pytest.fixture
def served(kb, tmp_path):
    if shutil.which("oxigraph") is None:
        pytest.skip("the oxigraph binary is not installed (pip install oxigraph)")
    data = linked3.build(kb, tmp_path / "work", log=lambda _: None)
    with linked3.Endpoint(data.catalog_store) as endpoint:
        linked3.write_config(data, endpoint.url)
        yield data, endpoint
    assert endpoint.proc is None  # stopped


async def test_the_config_links_catalog_films_by_identifier_and_cast_through_films(served):
    from tot_mcp.kg_adapters.config import open_kgs
    from tot_mcp.strategies.settings import load_config
    from tot_mcp.kg_adapters.routing import LinkedKG
    from tot_mcp.kg_adapters.sameness import Linker

    data, endpoint = served
    assert (
        data.cast_store.is_dir() and data.cast_store.with_name("cast.store.labels.sqlite").is_file()
    )
    config = load_config(data.config)
    assert [(r.from_kg, r.to_kg, r.kind, r.relation, r.to_relation) for r in config.link] == [
        ("catalog", "films", "identifier", "imdb", "imdb_id"),
        ("films", "cast", "label", None, None),
    ]
    kgs = open_kgs(config=config)
    assert [kg.capabilities.backend for kg in kgs.values()] == ["memory", "sparql", "oxigraph"]
    linker = Linker.configured(kgs, config.link, config.linking)
    try:
        probe = await linker.probe(config.link[0])  # what `tot-mcp --check` prints for the rule
        assert not probe.failed and probe.tried == probe.linked == 4, probe.line()

        films, catalog, cast = kgs["films"], kgs["catalog"], kgs["cast"]
        for title, shown in (
            ("Alpha", "Alpha (1999)"),
            ('Gamma "G" \\ 2', 'Gamma "G" \\ 2 (2010)'),
        ):
            (film,) = [e.id for e in await films.find_by_label(title)]
            (twin,) = (await linker.equivalents(film, "catalog")).ids
            assert await catalog.label_of(twin) == shown
            assert (await linker.equivalents(twin, "films")).ids == (film,)
        assert (
            await linker.equivalents((await films.find_by_label("Eli Fox"))[0].id, "catalog")
        ).ids == ()

        graph = LinkedKG(kgs, linker)
        delta = (await cast.find_by_label("Delta"))[
            0
        ].id  # in cast and (by its identifier) films; no rule to catalog
        same = await graph.same_as(delta)
        assert {i.split(":", 1)[0] for i in same} == {"films", "catalog"}
        assert [await catalog.label_of(i) for i in same if i.startswith("catalog:")] == [
            "Delta (1987)"
        ]
    finally:
        for kg in kgs.values():
            await kg.aclose()


async def test_a_client_answers_a_transitive_question_in_two_calls_by_relation_names(served):
    """cast → films (label link) → catalog (identifier link): ``initialize`` lists the relations by
    name, and one ``follow_path`` with those names crosses all three KGs (the links are never a hop
    of their own)."""
    from mcp_client import stdio_session, text_of

    data, _ = served
    async with stdio_session(["--config", str(data.config)]) as session:
        linked = await session.call_tool(
            "initialize", {"query": "what genres are the films starring [Dee Lane] in"}
        )
        text = text_of(linked)
        assert "cast:" in text and "Dee Lane" in text
        names = linked.structured_content["relations"]
        assert "cast: starred_actors" in names and "genre" in names and "releaseYear" in names
        (dee,) = [
            e["entity"]["id"]
            for e in linked.structured_content["entities"]
            if e["entity"]["label"] == "Dee Lane"
        ]
        path = await session.call_tool(
            "follow_path",
            {
                "entity_ids": [dee],
                "hops": [
                    {"relation_id": "starred_actors", "direction": "backward"},
                    {"relation_id": "genre"},
                ],
            },
        )
        assert not path.is_error, text_of(path)
        assert [t["label"] for t in path.structured_content["targets"]] == [
            "Thriller"
        ]  # Gamma's; Delta has none
        years = await session.call_tool(
            "follow_path",
            {
                "entity_ids": [dee],
                "hops": [
                    {"relation_id": "starred_actors", "direction": "backward"},
                    {"relation_id": "release year"},
                ],
            },
        )
        assert sorted(t["label"] for t in years.structured_content["targets"]) == ["1987", "2010"]
        wrong = await session.call_tool(
            "follow_path", {"entity_ids": [dee], "hops": [{"relation_id": "starred"}]}
        )
        assert (
            wrong.is_error
            and "no relation named 'starred'" in text_of(wrong)
            and "starred_actors" in text_of(wrong)
        )
        # one call: follow_path links the name itself, across the three KGs
        one = await session.call_tool(
            "follow_path",
            {
                "start": "Dee Lane",
                "hops": [
                    {"relation_id": "starred_actors", "direction": "backward"},
                    {"relation_id": "genre"},
                ],
            },
        )
        kgs = await session.call_tool("list_kgs", {})
    assert not one.is_error and [t["label"] for t in one.structured_content["targets"]] == [
        "Thriller"
    ], text_of(one)
    assert text_of(one).startswith(f"start 'Dee Lane' = {dee} Dee Lane")
    examples = kgs.structured_content["examples"]  # each relation's direction in words, in every KG
    assert any(k.startswith("cast:") for k in examples) and any(
        k.startswith("catalog:") for k in examples
    )
