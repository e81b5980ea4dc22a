"""Two KGs that share an identifier, not labels: the films KG (a triples file) gives each film an
IMDb-style ID; the catalog (Turtle behind a real SPARQL endpoint) carries the same ID as a literal
and titles that read "Alpha (1999)". An ``identifier`` rule joins them both ways, however the
relation is spelt (ID, local name, label), and a walk crosses from a director's films to their
catalog genres."""

from __future__ import annotations

import pytest
from oxigraph_fixture import serve_turtle
from retrieval_fixtures import shared_embedder

from tot_mcp.kg_adapters.errors import InvalidInput
from tot_mcp.kg_adapters.routing import LinkedKG
from tot_mcp.kg_adapters.sameness import Linker, LinkRule
from tot_mcp.kg_adapters.spec import make_spec, open_kg
from tot_mcp.strategies.offline import OfflinePolicy
from tot_mcp.strategies.tot.asm import TraversalASM
from tot_mcp.strategies.tot.search import SearchConfig, TreeSearch

FILMS = (
    "Alpha|directed_by|Eli Fox\nAlpha|imdb_id|tt0001\nBeta|directed_by|Eli "
    "Fox\nBeta|imdb_id|tt0002\nGamma|directed_by|Ann Lee\nGamma|imdb_id|tt0003\n"
)
CATALOG = """@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix c: <http://example.org/catalog/> .
c:imdb rdfs:label "IMDb ID" .
c:genre rdfs:label "genre" .
c:t1 rdfs:label "Alpha (1999)" ; c:imdb "tt0001" ; c:genre c:thriller .
c:t2 rdfs:label "Beta (2003)" ; c:imdb "tt0002" ; c:genre c:horror .
c:t3 rdfs:label "Gamma (2010)" ; c:imdb "tt0003" ; c:genre c:drama .
c:thriller rdfs:label "Thriller" .
c:horror rdfs:label "Horror" .
c:drama rdfs:label "Drama" .
"""


@pytest.fixture(scope="module")
def catalog_url(tmp_path_factory):
    yield from serve_turtle(tmp_path_factory.mktemp("identifier"), CATALOG)


@pytest.fixture(scope="module")
def kgs(catalog_url, tmp_path_factory):
    films = tmp_path_factory.mktemp("identifier-films") / "films.txt"
    films.write_text(FILMS, encoding="utf-8")
    return open_kg(make_spec("films", str(films))), open_kg(
        make_spec("catalog", f"sparql:{catalog_url}")
    )


@pytest.mark.parametrize(
    "relation, to_relation",
    [
        ("imdb_id", "imdb"),  # local names
        ("films:imdb_id", "IMDb ID"),  # an ID, and the SPARQL side by label
        (
            "imdb id",
            "http://example.org/catalog/imdb".rsplit("/", 1)[1],
        ),  # a label on the triples side
    ],
)
async def test_a_shared_identifier_links_both_ways_however_the_relation_is_spelt(
    kgs, relation, to_relation
):
    films, catalog = kgs
    linker = Linker(
        {"films": films, "catalog": catalog},
        [
            LinkRule(
                from_kg="films",
                to_kg="catalog",
                kind="identifier",
                relation=relation,
                to_relation=to_relation,
            )
        ],
    )
    alpha = (await films.find_by_label("Alpha"))[0].id
    (twin,) = (await linker.equivalents(alpha, "catalog")).ids
    assert await catalog.label_of(twin) == "Alpha (1999)"
    assert (await linker.equivalents(twin, "films")).ids == (alpha,)


async def test_a_whole_frontier_links_in_bulk_as_it_links_one_by_one(kgs):
    """Linker.prefetch: every film's twin from one bulk read of the identifiers and one lookup by
    value per batch, both directions, the same links equivalents() finds one entity at a time."""
    films, catalog = kgs
    rule = LinkRule(
        from_kg="films", to_kg="catalog", kind="identifier", relation="imdb_id", to_relation="imdb"
    )
    ids = [e.id for t in ("Alpha", "Beta", "Gamma") for e in await films.find_by_label(t)]
    one_by_one = Linker({"films": films, "catalog": catalog}, [rule])
    expected = [(await one_by_one.equivalents(i, "catalog")).ids for i in ids]
    assert all(len(x) == 1 for x in expected)
    bulk = Linker({"films": films, "catalog": catalog}, [rule])
    asked = []
    real = catalog.find_by_value

    async def counted(*args, **kwargs):
        asked.append(args)
        return await real(*args, **kwargs)

    catalog.find_by_value = counted
    try:
        await bulk.prefetch(ids, "catalog")
        assert [(await bulk.equivalents(i, "catalog")).ids for i in ids] == expected
        assert asked == []  # every link came from the bulk lookup
        twins = [x[0] for x in expected]
        await bulk.prefetch(twins, "films")
        assert [(await bulk.equivalents(t, "films")).ids for t in twins] == [(i,) for i in ids]
    finally:
        del catalog.find_by_value


async def test_a_walk_crosses_the_identifier_link_to_the_other_kgs_values(kgs):
    films, catalog = kgs
    rule = LinkRule(
        from_kg="films", to_kg="catalog", kind="identifier", relation="imdb_id", to_relation="imdb"
    )
    graph = LinkedKG(
        {"films": films, "catalog": catalog}, Linker({"films": films, "catalog": catalog}, [rule])
    )
    result = await TreeSearch(
        TraversalASM(graph),
        OfflinePolicy(graph, embedder=shared_embedder()),
        SearchConfig(k=3, max_expansions=12),
    ).run("what genres are the films directed by [Eli Fox]")
    assert set(result.answer.labels) == {"Thriller", "Horror"}, result.tree_text()


def test_a_rule_naming_a_relation_the_local_kg_lacks_is_refused_with_one_line(kgs):
    films, catalog = kgs
    with pytest.raises(InvalidInput, match="KG 'films' has no relation 'isbn'"):
        Linker(
            {"films": films, "catalog": catalog},
            [
                LinkRule(
                    from_kg="films",
                    to_kg="catalog",
                    kind="identifier",
                    relation="isbn",
                    to_relation="imdb",
                )
            ],
        )


def test_check_tries_every_link_rule_and_fails_one_that_links_nothing(catalog_url, tmp_path):
    """`tot-mcp --check` samples each rule's entities: a rule spelt so that it links nothing (values
    in another form) is one FAILED line and exit 1, not OK."""
    import subprocess

    from mcp_client import REPO, SERVER_CMD, server_env

    films_file = tmp_path / "films.txt"
    films_file.write_text(
        FILMS + FILMS.replace("tt000", "nm-").replace("imdb_id", "other_id"), encoding="utf-8"
    )
    endpoint = catalog_url

    def check(rules: str) -> subprocess.CompletedProcess:
        cfg = tmp_path / "kgs.toml"
        cfg.write_text(
            f'[kgs]\nfilms = "{films_file}"\ncatalog = "sparql:{endpoint}"\n{rules}',
            encoding="utf-8",
        )
        return subprocess.run(
            [*SERVER_CMD, "--config", str(cfg), "--check"],
            cwd=REPO,
            env=server_env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    good = check(
        '[[link]]\nfrom_kg = "films"\nto_kg = "catalog"\nkind = "identifier"\nrelation = '
        '"imdb_id"\nto_relation = "IMDb ID"\n'
    )
    assert good.returncode == 0, good.stdout + good.stderr
    assert (
        "link films↔catalog by identifier (imdb_id = IMDb ID): ok (3 of 3 sampled entities linked"
        in good.stdout
    )
    bad = check(
        '[[link]]\nfrom_kg = "films"\nto_kg = "catalog"\nkind = "identifier"\nrelation = '
        '"other_id"\nto_relation = "imdb"\n'
    )
    assert bad.returncode == 1
    assert (
        "link films↔catalog by identifier (other_id = imdb): FAILED: links nothing (0 of 3"
        in bad.stdout
    )
    assert bad.stdout.rstrip().endswith("1 KG(s) or link rule(s) failed")


CAST = "Alpha|starred_actors|Cy Park\nBeta|starred_actors|Cy Park\nGamma|starred_actors|Dee Lane\n"


@pytest.fixture(scope="module")
def three(kgs, tmp_path_factory):
    """cast (label link) ↔ films (identifier link) ↔ catalog; no rule between cast and catalog."""
    films, catalog = kgs
    path = tmp_path_factory.mktemp("cast") / "cast.txt"
    path.write_text(CAST, encoding="utf-8")
    cast = open_kg(make_spec("cast", str(path)))
    members = {"cast": cast, "films": films, "catalog": catalog}
    rules = [
        LinkRule(from_kg="cast", to_kg="films", kind="label"),
        LinkRule(
            from_kg="films",
            to_kg="catalog",
            kind="identifier",
            relation="imdb_id",
            to_relation="imdb",
        ),
    ]
    return LinkedKG(members, Linker(members, rules))


async def test_links_compose_a_cast_film_is_one_node_in_all_three_kgs(three):
    alpha = (await three.kgs["cast"].find_by_label("Alpha"))[0].id
    same = await three.same_as(alpha)
    assert {i.split(":", 1)[0] for i in same} == {"films", "catalog"}
    kgs_with_relations = {r.kg for r in (await three.get_relations([alpha])).relations}
    assert kgs_with_relations == {"cast", "films", "catalog"}  # the catalog's genre, two links away


async def test_one_follow_path_call_crosses_all_three_kgs(three):
    from tot_mcp.kg_adapters.follow import Hop, follow_path

    cy = (await three.kgs["cast"].find_by_label("Cy Park"))[0].id
    genre = next(
        r.id for r in (await three.kgs["catalog"].info()).relation_sample if r.label == "genre"
    )
    res = await follow_path(
        three,
        [cy],
        [
            Hop(relation_id="cast:starred_actors", direction="backward"),
            Hop(relation_id=genre, direction="forward"),
        ],
    )
    assert {t.label for t in res.targets} == {"Thriller", "Horror"}


async def test_a_path_back_through_the_starts_twin_in_another_kg_leaves_the_start_out(three):
    """films:Alpha → its cast → their films: cast:Alpha is films:Alpha, so it is not a target (nor
    walked through);
    exclude_start=False keeps it."""
    from tot_mcp.kg_adapters.follow import Hop, follow_path

    alpha = (await three.kgs["films"].find_by_label("Alpha"))[0].id
    hops = [
        Hop(relation_id="cast:starred_actors"),
        Hop(relation_id="cast:starred_actors", direction="backward"),
    ]
    assert [t.label for t in (await follow_path(three, [alpha], hops)).targets] == ["Beta"]
    kept = await follow_path(three, [alpha], hops, exclude_start=False)
    assert sorted(t.label for t in kept.targets) == ["Alpha", "Beta"]


async def test_a_walk_crosses_cast_films_catalog_with_no_rule_between_cast_and_catalog(three):
    result = await TreeSearch(
        TraversalASM(three),
        OfflinePolicy(three, embedder=shared_embedder()),
        SearchConfig(k=3, max_expansions=12),
    ).run("what genres are the films [Cy Park] starred in")
    assert set(result.answer.labels) == {"Thriller", "Horror"}, result.tree_text()


async def test_with_the_catalog_unlinked_the_answer_says_it_is_unsupported_not_confident(
    kgs, tmp_path
):
    """No rule reaches the catalog, where the genres are: whatever the walk answers is of the wrong
    kind, and the result says so (partial, with the relation the question names) instead of a
    confident film title."""
    films, catalog = kgs
    path = tmp_path / "cast.txt"
    path.write_text(CAST, encoding="utf-8")
    members = {"cast": open_kg(make_spec("cast", str(path))), "films": films, "catalog": catalog}
    graph = LinkedKG(
        members, Linker(members, [LinkRule(from_kg="cast", to_kg="films", kind="label")])
    )
    result = await TreeSearch(
        TraversalASM(graph),
        OfflinePolicy(graph, embedder=shared_embedder()),
        SearchConfig(k=3, max_expansions=12),
    ).run("what genres are the films [Cy Park] starred in")
    assert result.status != "answered" and result.value <= 0.3
    assert result.partial and result.partial_reason.startswith(
        "unsupported: the question's 'genres' reads as catalog:"
    )


def test_tot_search_opens_the_configs_kgs_as_the_server_opens_them(tmp_path, capsys):
    """`tot-search --config` alone opens the config's KGs (with their options) and links them by its
    rules: the same system `tot-mcp --config` serves, so a rule spelt for one works in the other."""
    (tmp_path / "films.txt").write_text(
        "Alpha|directed_by|Eli Fox\nAlpha|imdb_id|tt1\nBeta|directed_by|Ann Lee\n"
        "Beta|imdb_id|tt2\n",
        encoding="utf-8",
    )
    (tmp_path / "catalog.txt").write_text(
        "Alpha (1999)|imdb|tt1\nAlpha (1999)|has_genre|Thriller\n"
        "Beta (2003)|imdb|tt2\nBeta (2003)|has_genre|Drama\n",
        encoding="utf-8",
    )
    cfg = tmp_path / "kgs.toml"
    cfg.write_text(
        '[kgs]\nfilms = "films.txt"\n\n[kg.catalog]\nspec = "catalog.txt"\n\n'
        '[[link]]\nfrom_kg = "films"\nto_kg = "catalog"\nkind = "identifier"\nrelation = '
        '"imdb_id"\nto_relation = "imdb"\n',
        encoding="utf-8",
    )
    import tot_mcp.strategies.search_cli as cli

    code = cli.main(["--config", str(cfg), "what genre is the film directed by [Eli Fox]"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0] == "answer: Thriller"


async def test_a_rule_may_name_the_relation_by_its_full_iri(kgs):
    films, catalog = kgs
    linker = Linker(
        {"films": films, "catalog": catalog},
        [
            LinkRule(
                from_kg="films",
                to_kg="catalog",
                kind="identifier",
                relation="imdb_id",
                to_relation="http://example.org/catalog/imdb",
            )
        ],
    )
    alpha = (await films.find_by_label("Alpha"))[0].id
    assert len((await linker.equivalents(alpha, "catalog")).ids) == 1
